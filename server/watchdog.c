/* server/watchdog.c -- the request deadline (slowloris): each connection
 * watched from its start or last response, and closed when a request is
 * not whole within --conn-timeout (server/http_int.h). */
#include "http_int.h"

/* ---- the request deadline (slowloris) ------------------------------------
 * libmicrohttpd's connection timeout is an idle timeout: a client sending a
 * header byte every second never trips it and keeps its connection slot
 * forever. So each connection is also watched: from its start, or from the
 * end of its previous response, a whole request (headers and body) must
 * arrive within --conn-timeout seconds. A watchdog thread shuts down the
 * socket of a connection waiting too long for its headers (libmicrohttpd then
 * sees EOF and closes it on its own thread; the CLOSED notification, which
 * comes before the descriptor is closed, unlinks it under the same mutex, so
 * the watchdog never touches a descriptor that was reused); the body is
 * checked as it arrives (on_request). Requests being answered, suspended
 * searches included, are not watched. */

struct conn_watch {
    struct conn_watch *prev, *next;
    int fd;
    int busy;      /* a request's headers arrived; until its response ends */
    int shut;
    double since;  /* monotonic: connection start or end of the last response */
};

static pthread_mutex_t cw_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cw_cond = PTHREAD_COND_INITIALIZER;
static struct conn_watch cw_head = {&cw_head, &cw_head, -1, 0, 0, 0};
static pthread_t cw_thread;
static int cw_started, cw_stop;

void http_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        struct conn_watch *w = calloc(1, sizeof *w);
        *socket_context = w;
        if (!w) return;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        w->fd = ci ? ci->connect_fd : -1;
        w->since = srv_now_mono();
        pthread_mutex_lock(&cw_mu);
        w->next = &cw_head;
        w->prev = cw_head.prev;
        cw_head.prev->next = w;
        cw_head.prev = w;
        pthread_mutex_unlock(&cw_mu);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct conn_watch *w = *socket_context;
        *socket_context = NULL;
        if (!w) return;
        pthread_mutex_lock(&cw_mu);
        w->prev->next = w->next;
        w->next->prev = w->prev;
        pthread_mutex_unlock(&cw_mu);
        free(w);
    }
}

static struct conn_watch *conn_watch_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void http_conn_watch_set(struct MHD_Connection *c, int busy)
{
    struct conn_watch *w = conn_watch_of(c);
    if (!w) return;
    pthread_mutex_lock(&cw_mu);
    w->busy = busy;
    if (!busy) w->since = srv_now_mono();
    pthread_mutex_unlock(&cw_mu);
}

/* Seconds since the connection's current request began to arrive. */
double http_conn_watch_age(struct MHD_Connection *c, double fallback)
{
    struct conn_watch *w = conn_watch_of(c);
    if (!w) return srv_now_mono() - fallback;
    pthread_mutex_lock(&cw_mu);
    double age = srv_now_mono() - w->since;
    pthread_mutex_unlock(&cw_mu);
    return age;
}

static void *watchdog_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&cw_mu);
    while (!cw_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&cw_cond, &cw_mu, &ts);
        if (cw_stop) break;
        double now = srv_now_mono();
        int n = 0;
        for (struct conn_watch *w = cw_head.next; w != &cw_head; w = w->next) {
            if (w->busy || w->shut || w->fd < 0 || now - w->since <= http_cfg->conn_timeout_s) continue;
            shutdown(w->fd, SHUT_RDWR);
            w->shut = 1;
            n++;
        }
        if (n) srv_log(SRV_LOG_WARN, "msg=\"request not received in time\" closed=%d timeout_s=%d",
                       n, http_cfg->conn_timeout_s);
    }
    pthread_mutex_unlock(&cw_mu);
    return NULL;
}

void http_watchdog_start(void)
{
    cw_stop = 0;
    cw_started = pthread_create(&cw_thread, NULL, watchdog_main, NULL) == 0;
    if (!cw_started) srv_log(SRV_LOG_WARN, "msg=\"no request-deadline watchdog thread\"");
}

void http_watchdog_stop(void)
{
    if (!cw_started) return;
    {
        pthread_mutex_lock(&cw_mu);
        cw_stop = 1;
        pthread_cond_signal(&cw_cond);
        pthread_mutex_unlock(&cw_mu);
        pthread_join(cw_thread, NULL);
        cw_started = 0;
    }
}

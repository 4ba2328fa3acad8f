/* server/conn.c -- what the job loop does to HTTP connections: resume a
 * suspended one whose answer is set, and stop the listener taking new ones
 * (SIGTERM). Split from server/http.c (issue 15) so that the loop
 * (server/jobs.c) does not call up into the HTTP routing. */
#include "srv.h"

#include <unistd.h>

#include <microhttpd.h>

void srv_http_resume(struct srv_req *r)
{
    r->suspended = 0;
    MHD_resume_connection(r->conn);
}

/* The socket MHD_quiesce_daemon hands back: MHD's worker threads may still
 * have it in their epoll sets until they are joined (TSan saw close() race
 * with epoll_ctl), so it is closed after MHD_stop_daemon (srv_http_stop
 * calls srv_conn_close_quiesced). */
static MHD_socket quiesced_fd = MHD_INVALID_SOCKET;

void srv_http_quiesce(struct MHD_Daemon *d)
{
    if (quiesced_fd == MHD_INVALID_SOCKET) quiesced_fd = MHD_quiesce_daemon(d);
}

void srv_conn_close_quiesced(void)
{
    if (quiesced_fd != MHD_INVALID_SOCKET) {
        close(quiesced_fd);
        quiesced_fd = MHD_INVALID_SOCKET;
    }
}

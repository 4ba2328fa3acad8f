/* server/http_int.h -- inside the HTTP side (server/http.c, routes.c,
 * respond.c, watchdog.c): the configuration they read and what they give
 * one another. Nothing else includes it. */
#ifndef MFU_SERVER_HTTP_INT_H
#define MFU_SERVER_HTTP_INT_H

#include "srv.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api.h"
#include "sha256.h"

#define ALLOW_HEADERS "Content-Type, If-None-Match, Prefer, Authorization, Accept"
/* an oversized body announced without Expect is read and dropped up to
 * this, so the client reads the 413 (issue 14 item 6) */
#define DISCARD_MAX_BYTES (256ull << 20)

extern const struct srv_config *http_cfg;

/* server/routes.c */
int http_auth_ok(struct MHD_Connection *c);
size_t http_body_limit(const struct srv_req *r);
int http_cached(struct srv_req *r, int hit);
enum MHD_Result http_dispatch(struct srv_req *r);
enum srv_route http_match_route(const char *url, char *id_out, int *artifact);
int http_media_type_ok(const char *ct);
int http_parse_method(const char *m);
int http_route_allows(enum srv_route route, int method);
int http_trace_media_type_ok(const char *ct);

/* server/respond.c */
void http_add_common_headers(struct MHD_Response *resp);
void http_answer_typed(struct srv_req *r, int code, api_problem p, const char *title, const char *detail);
enum MHD_Result http_queue_answer(struct srv_req *r);
enum MHD_Result http_queue_json(struct srv_req *r, int code, json_t *body);
enum MHD_Result http_queue_problem(struct srv_req *r, int code, const char *title, const char *detail);
enum MHD_Result http_queue_static(struct srv_req *r, int code, const char *ctype, const char *data, size_t len);

/* server/watchdog.c */
double http_conn_watch_age(struct MHD_Connection *c, double fallback);
void http_conn_watch_set(struct MHD_Connection *c, int busy);
void http_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code);
/* the request-deadline thread (started after the daemon, stopped before it) */
void http_watchdog_start(void);
void http_watchdog_stop(void);

#endif

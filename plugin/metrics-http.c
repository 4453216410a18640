/* nbdkit-ftl: the Prometheus endpoint.  See metrics-http.h. */

#include <config.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include <nbdkit-plugin.h>

#include "ftl.h"
#include "metrics.h"
#include "metrics-http.h"

/* Set by metrics_http_start, cleared by metrics_http_stop, which nbdkit
 * calls from one thread (.after_fork and .cleanup).
 */
static struct MHD_Daemon *daemon_;

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The statistics now, malloc'd, or NULL: the exposition text, or the
 * JSON object of the stats= file if json.
 */
static char *
render (struct ftl *ftl, bool json, size_t *len)
{
  struct ftl_stat_set set = { 0 };
  char *text = NULL;
  FILE *fp;
  int r;

  if (ftl_stats_snapshot (ftl, FTL_STATS_SERVER, &set) < 0)
    return NULL;
  fp = open_memstream (&text, len);
  if (fp != NULL) {
    r = json ? ftl_render_json (&set, false, fp)
      : ftl_render_prometheus (&set, fp);
    if (fclose (fp) == EOF || r < 0) {
      free (text);
      text = NULL;
    }
  }
  ftl_stats_free (&set);
  return text;
}

static enum MHD_Result
reply (struct MHD_Connection *conn, unsigned status, const char *type,
       char *body, size_t len)
{
  struct MHD_Response *resp;
  enum MHD_Result r;

  resp = MHD_create_response_from_buffer (len, body, MHD_RESPMEM_MUST_FREE);
  if (resp == NULL) {
    free (body);
    return MHD_NO;
  }
  MHD_add_response_header (resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  r = MHD_queue_response (conn, status, resp);
  MHD_destroy_response (resp);
  return r;
}

/* A constant text reply. */
static enum MHD_Result
reply_text (struct MHD_Connection *conn, unsigned status, const char *msg)
{
  struct MHD_Response *resp;
  enum MHD_Result r;

  resp = MHD_create_response_from_buffer (strlen (msg), (void *) msg,
                                          MHD_RESPMEM_PERSISTENT);
  if (resp == NULL)
    return MHD_NO;
  MHD_add_response_header (resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
  r = MHD_queue_response (conn, status, resp);
  MHD_destroy_response (resp);
  return r;
}

static enum MHD_Result
handle (void *cls, struct MHD_Connection *conn, const char *url,
        const char *method, const char *version, const char *upload_data,
        size_t *upload_data_size, void **req_cls)
{
  struct ftl *ftl = cls;
  size_t len = 0;
  bool json;
  char *body;

  if (strcmp (method, MHD_HTTP_METHOD_GET) != 0 &&
      strcmp (method, MHD_HTTP_METHOD_HEAD) != 0)
    return reply_text (conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
  json = strcmp (url, "/stats.json") == 0;
  if (!json && strcmp (url, "/metrics") != 0)
    return reply_text (conn, MHD_HTTP_NOT_FOUND,
                       "not found: try /metrics or /stats.json\n");
  body = render (ftl, json, &len);
  if (body == NULL)
    return reply_text (conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                       "cannot render the statistics\n");
  return reply (conn, MHD_HTTP_OK, json ? "application/json" : CONTENT_TYPE,
                body, len);
}

int
metrics_http_start (struct ftl *ftl, unsigned port)
{
  struct sockaddr_in addr = {
    .sin_family = AF_INET,
    .sin_port = htons (port),
    .sin_addr.s_addr = htonl (INADDR_LOOPBACK),
  };

  daemon_ = MHD_start_daemon (MHD_USE_INTERNAL_POLLING_THREAD |
                              MHD_USE_ERROR_LOG,
                              port, NULL, NULL, handle, ftl,
                              MHD_OPTION_SOCK_ADDR, &addr,
                              MHD_OPTION_CONNECTION_LIMIT, 16u,
                              MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                              MHD_OPTION_END);
  if (daemon_ == NULL) {
    nbdkit_error ("metrics-port: cannot serve on 127.0.0.1:%u "
                  "(is the port in use?)", port);
    return -1;
  }
  return 0;
}

void
metrics_http_stop (void)
{
  if (daemon_) {
    MHD_stop_daemon (daemon_);
    daemon_ = NULL;
  }
}

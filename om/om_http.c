/* OpenMetrics over HTTP with libmicrohttpd's internal thread
 * (include/pulse/om.h). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "pulse/om.h"

struct om_http {
	struct MHD_Daemon *mhd;
	char *(*render)(void *ctx, size_t *len);
	void *ctx;
	char notfound[128];
	int port;
};

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	(void)version;
	(void)upload_data;
	(void)con_cls;
	struct om_http *h = cls;
	if (*upload_data_size)
		return MHD_NO;
	struct MHD_Response *r;
	unsigned code;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static const char m[] = "only GET\n";
		r = MHD_create_response_from_buffer(sizeof m - 1, (void *)m, MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics") && strcmp(url, "/")) {
		r = MHD_create_response_from_buffer(strlen(h->notfound), h->notfound,
						    MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_NOT_FOUND;
	} else {
		size_t len = 0;
		char *text = h->render(h->ctx, &len);
		if (!text)
			return MHD_NO;
		r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
		if (r)
			MHD_add_response_header(r, "Content-Type",
						"application/openmetrics-text; version=1.0.0; charset=utf-8");
		else
			free(text);
		code = MHD_HTTP_OK;
	}
	if (!r)
		return MHD_NO;
	enum MHD_Result ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

struct om_http *om_http_start(const char *listen, const char *opt, const char *who,
			      char *(*render)(void *ctx, size_t *len), void *ctx, char *err,
			      size_t errlen)
{
	char host[64];
	const char *colon = strrchr(listen, ':');
	if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof host) {
		snprintf(err, errlen, "%s %s: expected ADDR:PORT, e.g. 127.0.0.1:9464", opt, listen);
		return NULL;
	}
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = 0;
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || port < 0 || port > 65535) {
		snprintf(err, errlen, "%s %s: bad port", opt, listen);
		return NULL;
	}
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		snprintf(err, errlen, "%s %s: '%s' is not an IPv4 address", opt, listen, host);
		return NULL;
	}
	struct om_http *h = calloc(1, sizeof *h);
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->render = render;
	h->ctx = ctx;
	snprintf(h->notfound, sizeof h->notfound, "%s: metrics are at /metrics\n", who);
	h->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port,
				  NULL, NULL, handler, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
	if (!h->mhd) {
		snprintf(err, errlen, "%s %s: cannot listen (address in use or not local?)", opt, listen);
		free(h);
		return NULL;
	}
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
	h->port = di ? (int)di->port : (int)port;
	return h;
}

int om_http_port(const struct om_http *h)
{
	return h ? h->port : -1;
}

void om_http_stop(struct om_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->mhd);
	free(h);
}

/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * web/mhd_dl: libmicrohttpd, loaded by the HTTP server process when it starts its server
 * (dlopen of libmicrohttpd.so.12), not linked into hotcold. Linked, it and the TLS stack it
 * brings (GnuTLS, p11-kit, nettle, GMP) were mapped, relocated and initialised in each of
 * serve's processes, and in record and report, which never serve HTTP: 2.6 MB of RSS per
 * process. Only web/server.c calls it.
 */
#ifndef HOTCOLD_WEB_MHD_DL_H
#define HOTCOLD_WEB_MHD_DL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

/* The functions web/server.c calls, under their names without the MHD_ prefix. */
struct hc_mhd {
	struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port,
					   MHD_AcceptPolicyCallback apc, void *apc_cls,
					   MHD_AccessHandlerCallback dh, void *dh_cls, ...);
	void (*stop_daemon)(struct MHD_Daemon *d);
	const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *c,
							       enum MHD_ConnectionInfoType t, ...);
	int (*get_connection_values)(struct MHD_Connection *c, enum MHD_ValueKind kind,
				     MHD_KeyValueIterator it, void *it_cls);
	struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer,
							    enum MHD_ResponseMemoryMode mode);
	enum MHD_Result (*add_response_header)(struct MHD_Response *r, const char *header,
					       const char *content);
	enum MHD_Result (*queue_response)(struct MHD_Connection *c, unsigned int status,
					  struct MHD_Response *r);
	void (*destroy_response)(struct MHD_Response *r);
};

/* Filled by hc_mhd__load(); read only after it returned 0. */
extern struct hc_mhd hc_mhd;

/* libmicrohttpd loaded, once per process (thread-safe): 0, or -ELIBACC with why (may be NULL)
 * saying what is missing. */
int hc_mhd__load(char *why, size_t why_len);

#endif

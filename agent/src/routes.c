// SPDX-License-Identifier: GPL-2.0
/*
 * The API surface in one table: pattern, methods, body kind, handler.
 * The host tests link this same table against stub handlers.
 */
#include <stddef.h>

#include "handlers.h"
#include "router.h"

/*
 * Only the liveness probe, what the agent and its kernel can do, and the
 * aggregate counters are open: every read about a workload (its
 * arguments, pid, ledger of every siginfo it took, its output) needs the
 * token, as every change does.
 */
const struct route agent_routes[] = {
	{ "/v1/health", { { M_GET, handle_health, BODY_NONE, AUTH_BY_METHOD, NULL } } },
	{ "/v1/capabilities", { { M_GET, handle_capabilities, BODY_NONE, AUTH_BY_METHOD, NULL } } },
	{ "/v1/workloads", { { M_GET, handle_list, BODY_NONE, AUTH_ALWAYS, NULL },
			     { M_POST, handle_start, BODY_JSON, AUTH_BY_METHOD, NULL } } },
	{ "/v1/workloads/{id}", { { M_GET, handle_get, BODY_NONE, AUTH_ALWAYS, NULL },
				  { M_DELETE, handle_delete, BODY_NONE, AUTH_BY_METHOD, NULL } } },
	/* it freezes, dumps and thaws the workload: as costly as a checkpoint */
	{ "/v1/workloads/{id}/signals",
	  { { M_GET, handle_signals, BODY_NONE, AUTH_ALWAYS, NULL } } },
	{ "/v1/workloads/{id}/freeze", { { M_POST, handle_freeze, BODY_NONE, AUTH_BY_METHOD, NULL } } },
	{ "/v1/workloads/{id}/thaw", { { M_POST, handle_thaw, BODY_NONE, AUTH_BY_METHOD, NULL } } },
	{ "/v1/workloads/{id}/checkpoint",
	  { { M_POST, handle_checkpoint, BODY_NONE, AUTH_BY_METHOD, NULL } } },
	{ "/v1/workloads/{id}/migrate", { { M_POST, handle_migrate, BODY_JSON, AUTH_BY_METHOD, NULL } } },
	{ "/v1/workloads/{id}/requeue",
	  { { M_POST, handle_requeue, BODY_IMAGE, AUTH_BY_METHOD, NULL } } },
	{ "/v1/workloads/{id}/replay",
	  { { M_POST, handle_replay, BODY_NONE, AUTH_BY_METHOD, NULL } } },
	{ "/v1/workloads/{id}/ledger", { { M_GET, handle_ledger, BODY_NONE, AUTH_ALWAYS, NULL } } },
	{ "/v1/workloads/{id}/log", { { M_GET, handle_log, BODY_NONE, AUTH_ALWAYS, NULL } } },
	{ "/v1/restore", { { M_POST, handle_restore, BODY_IMAGE, AUTH_BY_METHOD,
			       restore_upload_part } } },
	{ "/metrics", { { M_GET, handle_metrics, BODY_NONE, AUTH_BY_METHOD, NULL } } },
	{ "/v1/debug/fault", { { M_POST, handle_debug_fault, BODY_JSON, AUTH_BY_METHOD, NULL } } },
	{ NULL, { { 0, NULL, 0, 0, NULL } } },
};

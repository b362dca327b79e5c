// SPDX-License-Identifier: GPL-2.0
/*
 * The API surface in one table: pattern, methods, body kind, handler.
 * The host tests link this same table against stub handlers.
 */
#include <stddef.h>

#include "handlers.h"
#include "router.h"

const struct route agent_routes[] = {
	{ "/v1/health", { { M_GET, handle_health, BODY_NONE } } },
	{ "/v1/capabilities", { { M_GET, handle_capabilities, BODY_NONE } } },
	{ "/v1/workloads", { { M_GET, handle_list, BODY_NONE },
			     { M_POST, handle_start, BODY_JSON } } },
	{ "/v1/workloads/{id}", { { M_GET, handle_get, BODY_NONE },
				  { M_DELETE, handle_delete, BODY_NONE } } },
	{ "/v1/workloads/{id}/signals", { { M_GET, handle_signals, BODY_NONE } } },
	{ "/v1/workloads/{id}/freeze", { { M_POST, handle_freeze, BODY_NONE } } },
	{ "/v1/workloads/{id}/thaw", { { M_POST, handle_thaw, BODY_NONE } } },
	{ "/v1/workloads/{id}/checkpoint",
	  { { M_POST, handle_checkpoint, BODY_NONE } } },
	{ "/v1/workloads/{id}/migrate", { { M_POST, handle_migrate, BODY_JSON } } },
	{ "/v1/workloads/{id}/requeue", { { M_POST, handle_requeue, BODY_IMAGE } } },
	{ "/v1/workloads/{id}/ledger", { { M_GET, handle_ledger, BODY_NONE } } },
	{ "/v1/workloads/{id}/log", { { M_GET, handle_log, BODY_NONE } } },
	{ "/v1/restore", { { M_POST, handle_restore, BODY_IMAGE } } },
	{ "/metrics", { { M_GET, handle_metrics, BODY_NONE } } },
	{ "/v1/debug/fault", { { M_POST, handle_debug_fault, BODY_JSON } } },
	{ NULL, { { 0, NULL, 0 } } },
};

// SPDX-License-Identifier: GPL-2.0
/* No-op handlers so that the real route table links into host tests. */
#include "handlers.h"

#define STUB(name) \
	void name(struct request *req, struct reply *out) { (void)req; (void)out; }

STUB(handle_health)
STUB(handle_capabilities)
STUB(handle_list)
STUB(handle_start)
STUB(handle_get)
STUB(handle_delete)
STUB(handle_signals)
STUB(handle_freeze)
STUB(handle_thaw)
STUB(handle_checkpoint)
STUB(handle_migrate)
STUB(handle_ledger)
STUB(handle_log)
STUB(handle_restore)
STUB(handle_requeue)
STUB(handle_replay)
STUB(handle_metrics)
STUB(handle_debug_fault)

void restore_upload_part(struct request *req)
{
	(void)req;
}

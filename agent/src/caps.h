/* SPDX-License-Identifier: GPL-2.0 */
#ifndef AGENT_CAPS_H
#define AGENT_CAPS_H

#include <stdbool.h>
#include <jansson.h>

struct kernel_caps {
	char release[65];
	char machine[65];
	bool sfd_raw;		/* signalfd4 accepts SFD_RAW, records are siginfo_t */
	bool sfd_queues;	/* SFD_PRIVATE / SFD_GROUP accepted */
	bool queue_pread;	/* pread() peeks a queue without dequeuing */
	char detail[160];	/* why not, when something is missing */
};

/* Probes the running kernel; never fails (missing features are false). */
void caps_probe(struct kernel_caps *caps);
bool caps_interface_ok(const struct kernel_caps *caps);
json_t *caps_to_json(const struct kernel_caps *caps);

#endif

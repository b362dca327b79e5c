/* SPDX-License-Identifier: GPL-2.0 */
#ifndef AGENT_CAPS_H
#define AGENT_CAPS_H

#include <stdbool.h>
#include <jansson.h>
#include <sigmig/sfd_probe.h>

struct kernel_caps {
	char release[65];
	char machine[65];
	struct sfd_caps sfd;	/* what <sigmig/sfd_probe.h> found */
};

/* Probes the running kernel; never fails (missing features are false). */
void caps_probe(struct kernel_caps *caps);
bool caps_interface_ok(const struct kernel_caps *caps);
/* Why the interface is not usable, or "" when it is. */
const char *caps_missing(const struct kernel_caps *caps);
json_t *caps_to_json(const struct kernel_caps *caps);

#endif

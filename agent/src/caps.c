// SPDX-License-Identifier: GPL-2.0
/*
 * What the agent tells about the kernel it runs on: uname and the result of
 * the signalfd interface probe every component shares (<sigmig/sfd_probe.h>).
 */
#include <stdio.h>
#include <sys/utsname.h>

#include "caps.h"
#include "config.h"

void caps_probe(struct kernel_caps *caps)
{
	struct utsname uts;

	memset(caps, 0, sizeof(*caps));
	if (uname(&uts) == 0) {
		snprintf(caps->release, sizeof(caps->release), "%s", uts.release);
		snprintf(caps->machine, sizeof(caps->machine), "%s", uts.machine);
	}
	sfd_probe(&caps->sfd);
}

bool caps_interface_ok(const struct kernel_caps *caps)
{
	return sfd_interface_usable(&caps->sfd);
}

const char *caps_missing(const struct kernel_caps *caps)
{
	return caps->sfd.missing;
}

json_t *caps_to_json(const struct kernel_caps *caps)
{
	json_t *o;

	o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:b, s:b, s:b, s:b, s:b}, s:b}",
		      "agent_version", AGENT_VERSION,
		      "api_version", AGENT_API_VERSION,
		      "kernel", "release", caps->release,
		      "machine", caps->machine,
		      "signalfd", "sfd_raw", caps->sfd.raw,
		      "sfd_private_group", caps->sfd.queues,
		      "queue_pread", caps->sfd.peek,
		      "queue_write", caps->sfd.write,
		      "queue_seal", caps->sfd.seal,
		      "migration", caps_interface_ok(caps));
	if (o && caps->sfd.missing[0])
		json_object_set_new(json_object_get(o, "signalfd"), "missing",
				    json_string(caps->sfd.missing));
	return o;
}

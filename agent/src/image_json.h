/* SPDX-License-Identifier: GPL-2.0 */
/* A decoded checkpoint image as JSON: queues decoded signal by signal. */
#ifndef AGENT_IMAGE_JSON_H
#define AGENT_IMAGE_JSON_H

#include <jansson.h>
#include <sigmig/image.h>

/* At most @limit signals are listed per queue; counts are always exact. */
json_t *image_to_json(const struct sigmig_image *img, unsigned int limit);

#endif

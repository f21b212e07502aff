/* A config made of a base config and only what differs, for a config
 * written by a script (scripts/lab's app host) that must not drift from
 * the tracked one.
 *
 * The overlay is ini text of the differences:
 *   - its lines before the first section replace the base's opening
 *     comment (and its include line);
 *   - [SECTION] of the base: each `key = value` replaces the base's line of
 *     that key (with its indented continuation lines), or is added at the
 *     section's end, above its closing comment; `key =` with no value
 *     drops the key;
 *   - [NEW < SECTION]: a section the base does not have, made from the
 *     base's SECTION with SECTION's overlay keys, then NEW's own, applied;
 *     it comes after the base's sections.
 * Every section of the base is kept, in the base's order, with its
 * comments. */
#ifndef ZB_OVERLAY_H
#define ZB_OVERLAY_H

#include <stdio.h>

/* Writes the base overlaid to out; -1 after saying why on stderr (a
 * section the base lacks, too many sections, keys or lines). */
int overlay_write(FILE *overlay, FILE *base, FILE *out);

#endif

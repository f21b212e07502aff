/* loader --csv: a CSV file of one's own as a dataset, without an edit of
 * the tracked config. Its section goes into an overlay, DIR/NAME.conf,
 * where DIR is the directory the config's include reads (conf.h): the
 * loader, the server and the bench then know the dataset by NAME. */
#ifndef ZB_LOADER_OVERLAY_H
#define ZB_LOADER_OVERLAY_H

#include <stddef.h>

#include "dataset.h"

/* The dataset name a file gets by default: its base name without the
 * extension, lower-case letters, digits and _ (anything else becomes _),
 * "csv_" in front when it would not start with a letter. */
void overlay_name(const char *file, char *name, size_t len);

/* Whether name can name a dataset: letters, digits and _, a letter or _
 * first, at most 63 bytes (whether its tables fit each backend is
 * load_check_names's to say). 0, or -1 with err. */
int overlay_check_name(const char *name, struct zb_err *err);

/* A dataset for the CSV at path (made absolute into file[file_len], so the
 * overlay holds wherever zipbench runs from): format csv, the first line
 * naming the columns, key `key` (a header's text, byte for byte), the
 * delimiter guessed from the first line (a tab or a semicolon when it
 * holds one of those and no comma), every
 * type inferred from every row. Its strings point into name and file.
 * Returns 0, or -1 with err (the file cannot be opened). */
int overlay_dataset(struct dataset_conf *dc, const char *name, const char *path, char *file,
                    size_t file_len, const char *key, struct zb_err *err);

/* Writes d's section, its columns (their SQL names: the key too) with the
 * types described, to
 * DIR/NAME.conf (path into path[len]), through a file beside it renamed
 * into place. Returns 0, or -1 with err. */
int overlay_write(const char *dir, const struct dataset *d, char *path, size_t len,
                  struct zb_err *err);

#endif

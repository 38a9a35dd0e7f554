/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * zstd chunks compressed on an idle core while the pages stream in, ahead of
 * the finish (compress.c).
 */
#ifndef RECORD_COMPRESS_H
#define RECORD_COMPRESS_H

struct stream;

int compress_start(int level);
void compress_stop(void);
void compress_attach(struct stream *s);
void compress_publish(struct stream *s);
void compress_detach(struct stream *s);

#endif

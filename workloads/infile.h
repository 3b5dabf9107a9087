/*
 * The one way the workload readers open an input file: the Mooncake JSONL
 * reader (mooncake.c) and every CSV reader (csv.c's wl_csv_open, used by
 * the key-rate, inter-arrival and ServeGen readers).  It refuses what is
 * not a regular file, and reads gzip and xz files as if they were plain,
 * so the public traces can ship compressed in the repository (data/,
 * data/README.md) and be read where they lie.
 *
 * The format is decided by the file's first bytes (its "magic"), not its
 * name:
 *   - 1f 8b                 gzip (RFC 1952), read through zlib; several
 *                           concatenated members read as one stream.
 *   - fd 37 7a 58 5a 00     xz (the .xz file format, tukaani.org/xz),
 *                           read through liblzma; concatenated streams too.
 *   - anything else         plain bytes, read as they are.
 * A name ending in ".gz" or ".xz" whose first bytes are not that format's
 * magic is an error (a renamed or half-written file), and so are files
 * compressed with zstd (28 b5 2f fd), bzip2 ("BZh") or zip ("PK\3\4"),
 * which crsim does not read: it says how to make a file it reads.
 *
 * Decompression is streamed (a 64 KiB input buffer), never the whole file
 * in memory.  A compressed file that is corrupt or ends early is found
 * while it is read: the stream's error flag is set and errno is EBADMSG
 * ("Bad message"), so the reader's own read-error message names the file
 * and line where the data broke.
 *
 * Needs glibc or musl (fopencookie).
 */
#ifndef CRSIM_WORKLOADS_INFILE_H
#define CRSIM_WORKLOADS_INFILE_H

#include <stdio.h>

/* How an input file's bytes are stored (wl_infile_open's *format). */
typedef enum wl_infile_format {
    WL_INFILE_PLAIN = 0, /* read as it is */
    WL_INFILE_GZIP,      /* gzip, decompressed through zlib */
    WL_INFILE_XZ         /* xz, decompressed through liblzma */
} wl_infile_format;

/*
 * Open `path` for reading, decompressing gzip and xz on the fly (see the
 * file comment).  `what` names the file's kind in messages ("key-rate
 * file", "Mooncake JSONL trace").  On success *out is a stream positioned
 * at the first byte of the (decompressed) content, which the caller closes
 * with fclose (that also frees the decompressor and closes the file);
 * *format, if not NULL, receives the format found.
 *
 * Errors (*out NULL; the message starts with the path):
 *   SIM_EIO    "PATH: cannot open WHAT: <strerror>" (missing, unreadable),
 *              "PATH: cannot open WHAT: it is a directory, not a regular
 *              file; expected a regular file (plain, .gz or .xz)", and the
 *              same for a FIFO, socket or device (opened without blocking,
 *              never read);
 *   SIM_EINVAL "PATH: named .xz but its first bytes are not xz data; ...",
 *              "PATH: WHAT is compressed with zstd, which crsim does not
 *              read; expected plain text, gzip (.gz) or xz (.xz) ...";
 *   SIM_ENOMEM the decompressor could not be allocated.
 * A read error later (including corrupt or truncated compressed data)
 * sets the stream's error flag and errno (EBADMSG for bad data).
 */
int wl_infile_open(const char *path, const char *what, FILE **out, wl_infile_format *format);

/* Name of a format ("plain", "gzip", "xz"), for messages.  Cannot fail. */
const char *wl_infile_format_name(wl_infile_format f);

#endif

// SPDX-License-Identifier: MIT
/**
 * @file Opening hetopt's own output files (traces, plans, the DB, reports, plot data) so that
 * another user cannot redirect or read what hetopt writes: no symbolic link is followed, an
 * existing file must be this user's own, and what is written is 0600. Lean (libc only, no
 * allocation): the shim's trace writer and count report use it inside other people's processes.
 */
#pragma once

namespace hetopt {

/// Opens `path` write-only for a file of hetopt's own: O_NOFOLLOW (a symbolic link at `path`, as
/// someone may plant in a shared directory, is refused), O_CLOEXEC, never blocking on a FIFO; a new
/// file is created 0600. An existing regular file must belong to this user and have no other hard
/// link; it is truncated only after these checks (`truncate`) and set to 0600. Existing devices
/// (/dev/null) are opened as they are. Returns the descriptor, or -1 with *why (a static phrase
/// such as "is a symbolic link; refusing to write through it") and errno set.
int openPrivateFile(const char* path, bool truncate, bool append, const char** why);

/// The same checks, opened for reading and writing (O_RDWR, never truncated): a file hetopt keeps
/// and updates in place under a lock, such as the run ledger.
int openPrivateFileReadWrite(const char* path, const char** why);

}  // namespace hetopt

// Where a checkpoint's files go and how one becomes complete: a save writes into DIR/.TAG.partial;
// when every rank's file is on the drive, rank 0 renames it to DIR/TAG and then replaces
// DIR/latest (write, fsync, rename, fsync the folder), so that a job killed at any point leaves
// `latest` naming a complete checkpoint.
#pragma once

#include <string>

namespace strata::rt {

// Throws Error naming `call` when `tag` cannot be a folder name of its own ("", ".", "..",
// "latest", a '/', a leading '.').
void check_checkpoint_tag(const std::string& tag, const char* call);
// DIR/TAG and DIR/.TAG.partial.
std::string checkpoint_dir(const std::string& dir, const std::string& tag);
std::string partial_checkpoint_dir(const std::string& dir, const std::string& tag);
// Rank 0, before any rank writes: creates DIR if needed and an empty DIR/.TAG.partial, and removes
// the partial folders of saves that were killed part-way.
void prepare_partial_dir(const std::string& dir, const std::string& tag);
// Rank 0, after every rank's file is on the drive: DIR/.TAG.partial becomes DIR/TAG (an older
// DIR/TAG is replaced), then DIR/latest names TAG.
void commit_checkpoint(const std::string& dir, const std::string& tag);
// The tag to load: `tag` itself, or for "" and "latest" the one DIR/latest names.
std::string resolve_checkpoint_tag(const std::string& dir, const std::string& tag);

}  // namespace strata::rt

// The job's timeline (STRATA_TIMELINE=PATH or the manifest's "timeline"): what the runtime and its
// plugins did on each rank, as a Chrome trace that opens in Perfetto with a track per rank.
//
// Recording is an append under a mutex to an in-memory vector (no formatting, no I/O); a writer
// thread takes the vector every 100 ms, formats it and appends it to this rank's part file,
// PATH.rank<R>.part, so memory stays bounded however long the job runs and the step never waits
// for the drive. The part file is a JSON array that Perfetto opens as it is, even unfinished.
//
// At a clean strata_destroy every rank sends its part to rank 0 through the comm stratum, and
// rank 0 writes PATH (through a temporary file and a rename: never half-written) and the parts are
// removed. A rank that ends in a failure or a stall instead finishes its own part with the
// failure's message as PATH.rank<R>.json: the stall message and the trace then tell the same
// story, down to the collective's number (events' "seq" is the stall message's "#N").
#pragma once

#include "faults/activity.hpp"
#include "timeline/trace_event.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strata::rt {

class Collectives;

class Timeline {
 public:
  // Opens PATH.rank<rank>.part; throws Error(STRATA_ERR_INVALID_ARGUMENT) naming `origin` (the
  // manifest key or variable the path came from) and the path when it cannot be written. Times
  // count from `origin_ns`, taken by every rank at the same moment (after a barrier) so that the
  // ranks' tracks line up. `board` gives the step each event belongs to; it must outlive this.
  Timeline(const std::string& path, const std::string& origin, int rank, int64_t origin_ns,
           const ActivityBoard& board);
  // Finishes this rank's part as PATH.rank<R>.json if neither finish call ran.
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Records a span on the calling thread's track. `name` and `category` must outlive the
  // timeline (literals, or the host-services labels). Thread-safe; dropped once finished.
  void span(const char* category, const char* name, int64_t begin_ns, int64_t end_ns,
            int64_t index = -1, uint64_t bytes = 0, uint64_t seq = 0, bool in_flight = false);
  // A span recorded as it begins, for work a rank may never come back from (a blocking
  // collective, a runtime call): if the rank fails while it is open, finish_alone writes it as
  // ending at the failure, marked unfinished, so the trace shows where the rank was stuck. Spans
  // opened on one thread close in reverse order (they nest); `Open` is the token. The step is the
  // one in progress when it began. Thread-safe.
  using Open = size_t;
  static constexpr Open kNotOpen = SIZE_MAX;
  Open open(const char* category, const char* name, int64_t index = -1, uint64_t bytes = 0,
            uint64_t seq = 0);
  void close(Open token);
  // An instant event with free text (a skipped step, a stall, a failure). Thread-safe.
  void instant(const char* category, const char* name, std::string message);
  // The steady clock, as the spans use it.
  static int64_t now_ns() { return ActivityBoard::now_ns(); }

  // Collective, at a clean end: rank 0 writes PATH from every rank's part; the parts go. Throws
  // Error on a failed collective or write (the parts then stay where they are).
  void finish_merged(const Collectives& collectives);
  // This rank alone, at a failure: writes `message` as the last event and finishes the part as
  // PATH.rank<R>.json. Returns that path ("" if it could not be written). Thread-safe; once.
  std::string finish_alone(const std::string& message);

  const std::string& path() const { return path_; }

 private:
  uint32_t thread_id();  // registers the calling thread's name on first use
  // An event of the calling thread, in the step in progress.
  TraceEvent event(const char* category, const char* name);
  void writer_loop();
  // Stops the writer after it wrote everything recorded; later events are dropped.
  void stop_writer();
  void write_pending(std::vector<TraceEvent>& batch);

  const std::string path_;
  const std::filesystem::path part_path_;
  const int rank_;
  const int64_t origin_ns_;
  const uint64_t serial_;  // tells this timeline's threads from an earlier one's
  const ActivityBoard& board_;

  std::mutex mutex_;  // guards the members below, up to the writer
  std::vector<TraceEvent> pending_;
  std::vector<TraceEvent> open_;  // opened and not yet closed, in opening order
  std::map<uint32_t, std::string> new_threads_;  // tid -> name, not yet written
  std::condition_variable wake_;
  bool stopping_ = false;
  bool finished_ = false;

  std::once_flag stopped_;
  std::timed_mutex file_mutex_;  // the part file: the writer thread, then the finish calls
  std::FILE* part_ = nullptr;
  std::string text_;       // formatting buffer, reused
  uint64_t next_id_ = 1;   // of in-flight spans

  std::thread writer_;  // last: starts once the members above exist
};

// Where the runtime's parts that record (the comm proxy, the host services lent to plugins, the
// watchdog) find the timeline: one slot the engine owns and sets when the timeline opens, and
// clears when it is finished; nullptr when none is recorded. They read it once per event.
using TimelineSlot = std::atomic<Timeline*>;

}  // namespace strata::rt

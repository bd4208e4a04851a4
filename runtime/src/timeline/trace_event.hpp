// One event of the job's timeline and its text in the Chrome trace event format (the JSON that
// Perfetto and chrome://tracing open): "complete" events (ph "X") for spans, instant events (ph
// "i") for skipped steps and fault messages, metadata (ph "M") naming ranks and threads.
#pragma once

#include <cstdint>
#include <string>

namespace strata::rt {

struct TraceEvent {
  const char* name = "";      // static storage: a literal of the runtime's or a plugin's
  const char* category = "";  // "api", "step", "comm", or a stratum's name for plugin spans
  int64_t begin_ns = 0;       // steady clock
  int64_t end_ns = 0;         // == begin_ns for an instant
  int64_t index = -1;         // parameter, group or bucket; -1: none
  uint64_t bytes = 0;
  uint64_t step = 0;          // optimizer steps done when the event began: the step it belongs to
  uint64_t seq = 0;           // a collective's number, as stall messages give it; 0: none
  uint32_t tid = 0;
  bool instant = false;
  bool in_flight = false;     // an async pair ("b"/"e") on a track of its own, not the thread's
  bool unfinished = false;    // still open when its rank failed: it ends at the failure
  std::string message;        // instants only: free text (a fault's message)
};

// Appends `e` for rank `pid` (one JSON object; an in-flight span is two, a begin and an end,
// joined by ",\n"; no separator after); times are microseconds since `origin_ns`. `id` tells
// in-flight spans apart.
void append_trace_event(std::string& out, const TraceEvent& e, int pid, int64_t origin_ns,
                        uint64_t id);
// Metadata events: the rank's track name and order, a thread's name.
void append_process_name(std::string& out, int pid);
void append_thread_name(std::string& out, int pid, uint32_t tid, const std::string& name);

}  // namespace strata::rt

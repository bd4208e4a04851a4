#include "timeline/timeline.hpp"

#include "engine/collectives.hpp"
#include "error.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace strata::rt {
namespace {

constexpr auto kWriteEvery = std::chrono::milliseconds(100);
constexpr size_t kChunkBytes = size_t{4} << 20;  // how much of a part one broadcast carries
const std::string kPartHead = "[\n";             // a part file's first bytes; what follows is merged

// Which timeline a thread registered with (by serial number: a later timeline may reuse an
// earlier one's address), and its id there.
struct ThreadSlot {
  uint64_t timeline = 0;
  uint32_t tid = 0;
};
thread_local ThreadSlot t_slot;
std::atomic<uint64_t> g_timelines{0};

std::string thread_name() {
  if (static_cast<pid_t>(syscall(SYS_gettid)) == getpid()) return "main thread";
  char name[32] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof name) != 0 || name[0] == '\0') return "thread";
  return name;
}

bool write_all(std::FILE* f, const char* data, size_t bytes) {
  return bytes == 0 || std::fwrite(data, 1, bytes, f) == bytes;
}

// Makes a rename durable: the folder's entry is on the drive, not only the file.
void sync_folder(const std::filesystem::path& file) {
  const std::filesystem::path folder = file.has_parent_path() ? file.parent_path() : ".";
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

Timeline::Timeline(const std::string& path, const std::string& origin, int rank, int64_t origin_ns,
                   const ActivityBoard& board)
    : path_(path), part_path_(path + ".rank" + std::to_string(rank) + ".part"), rank_(rank),
      origin_ns_(origin_ns), serial_(++g_timelines), board_(board) {
  std::error_code ec;
  if (std::filesystem::is_directory(path_, ec)) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                origin + ": '" + path_ + "' is a folder; expected the path of the timeline's "
                "Chrome trace JSON file to write");
  }
  part_ = std::fopen(part_path_.c_str(), "w+");  // read back by finish_merged
  if (part_ == nullptr) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                origin + ": cannot write the timeline next to '" + path_ + "' (" +
                    part_path_.string() + ": " + errno_text() +
                    "); expected a path in a folder that exists and is writable");
  }
  std::string head = kPartHead;
  append_process_name(head, rank_);
  (void)write_all(part_, head.data(), head.size());
  std::fflush(part_);
  writer_ = std::thread([this] { writer_loop(); });
}

Timeline::~Timeline() { (void)finish_alone(""); }

uint32_t Timeline::thread_id() {
  if (t_slot.timeline == serial_) return t_slot.tid;
  t_slot = {serial_, static_cast<uint32_t>(syscall(SYS_gettid))};
  std::string name = thread_name();
  std::lock_guard lock(mutex_);
  new_threads_.emplace(t_slot.tid, std::move(name));
  return t_slot.tid;
}

TraceEvent Timeline::event(const char* category, const char* name) {
  TraceEvent e;
  e.category = category;
  e.name = name;
  e.step = board_.steps_done();
  e.tid = thread_id();
  return e;
}

void Timeline::span(const char* category, const char* name, int64_t begin_ns, int64_t end_ns,
                    int64_t index, uint64_t bytes, uint64_t seq, bool in_flight) {
  TraceEvent e = event(category, name);
  e.begin_ns = begin_ns;
  e.end_ns = std::max(begin_ns, end_ns);
  e.index = index;
  e.bytes = bytes;
  e.seq = seq;
  e.in_flight = in_flight;
  std::lock_guard lock(mutex_);
  if (!stopping_) pending_.push_back(std::move(e));
}

Timeline::Open Timeline::open(const char* category, const char* name, int64_t index,
                             uint64_t bytes, uint64_t seq) {
  TraceEvent e = event(category, name);
  e.index = index;
  e.bytes = bytes;
  e.seq = seq;
  e.begin_ns = now_ns();
  std::lock_guard lock(mutex_);
  if (stopping_) return kNotOpen;  // finished: nothing more is written
  open_.push_back(std::move(e));
  return open_.size() - 1;
}

void Timeline::close(Open token) {
  const int64_t end = now_ns();
  std::lock_guard lock(mutex_);
  if (token >= open_.size()) return;  // opened after the end, or finish_alone wrote it already
  TraceEvent e = std::move(open_[token]);
  // Spans on one thread nest, but another thread's may have opened above this one meanwhile: only
  // the top of the stack is popped, the rest is marked closed and popped when it reaches the top.
  open_[token].name = nullptr;
  while (!open_.empty() && open_.back().name == nullptr) open_.pop_back();
  e.end_ns = std::max(e.begin_ns, end);
  if (!stopping_) pending_.push_back(std::move(e));
}

void Timeline::instant(const char* category, const char* name, std::string message) {
  TraceEvent e = event(category, name);
  e.begin_ns = e.end_ns = now_ns();
  e.instant = true;
  e.message = std::move(message);
  std::lock_guard lock(mutex_);
  if (!stopping_) pending_.push_back(std::move(e));
}

void Timeline::writer_loop() {
  pthread_setname_np(pthread_self(), "strata timeline");
  std::vector<TraceEvent> batch;
  std::map<uint32_t, std::string> threads;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait_for(lock, kWriteEvery, [&] { return stopping_; });
    batch.swap(pending_);
    threads.swap(new_threads_);
    const bool stop = stopping_;
    lock.unlock();
    {
      std::lock_guard file(file_mutex_);
      text_.clear();
      for (const auto& [tid, name] : threads) {
        text_ += ",\n";
        append_thread_name(text_, rank_, tid, name);
      }
      for (const TraceEvent& e : batch) {
        text_ += ",\n";
        // Async ids are global in the trace format: the rank in the high bits keeps ranks apart.
        const uint64_t id = e.in_flight ? (static_cast<uint64_t>(rank_) << 40) | next_id_++ : 0;
        append_trace_event(text_, e, rank_, origin_ns_, id);
      }
      if (part_ != nullptr && write_all(part_, text_.data(), text_.size())) std::fflush(part_);
    }
    batch.clear();
    threads.clear();
    lock.lock();
    // Once stopping, span() records nothing more, so the swap above took the last events.
    if (stop) return;
  }
}

void Timeline::stop_writer() {
  std::call_once(stopped_, [this] {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    writer_.join();
  });
}

std::string Timeline::finish_alone(const std::string& message) {
  {
    // What this rank was inside when it failed (a collective it never came back from, the call
    // around it): written as ending now, before the failure's message.
    const int64_t now = now_ns();
    std::lock_guard lock(mutex_);
    for (TraceEvent& e : open_) {
      if (e.name == nullptr || stopping_) continue;
      e.end_ns = std::max(e.begin_ns, now);
      e.unfinished = true;
      pending_.push_back(e);
    }
    open_.clear();
  }
  if (!message.empty()) instant("runtime", "failure", message);
  stop_writer();
  // The host's thread may be stuck in finish_merged's collectives holding the file: the watchdog,
  // ending the process, must not wait for it.
  std::unique_lock file(file_mutex_, std::defer_lock);
  if (!file.try_lock_for(std::chrono::seconds(1)) || part_ == nullptr) return "";
  const std::string tail = "\n]\n";
  const bool written =
      std::fseek(part_, 0, SEEK_END) == 0 && write_all(part_, tail.data(), tail.size());
  const bool closed = std::fclose(part_) == 0;
  part_ = nullptr;
  const std::string kept = path_ + ".rank" + std::to_string(rank_) + ".json";
  if (!written || !closed || std::rename(part_path_.c_str(), kept.c_str()) != 0) return "";
  return kept;
}

void Timeline::finish_merged(const Collectives& collectives) {
  stop_writer();
  std::unique_lock file(file_mutex_);
  if (part_ == nullptr) throw Error(STRATA_ERR_INTERNAL, "the timeline was already finished");
  std::fflush(part_);
  const long end = std::ftell(part_);
  const int64_t mine = std::max<int64_t>(0, static_cast<int64_t>(end) - static_cast<int64_t>(kPartHead.size()));
  const int ranks = collectives.world_size();
  std::vector<int64_t> sizes(static_cast<size_t>(ranks));
  collectives.allgather(&mine, sizes.data(), 1, STRATA_I64);

  // Rank 0 writes; every rank takes part in every broadcast, whatever happens to rank 0's file, so
  // that the collectives match. The first problem is kept, and agreed on at the end.
  const std::string temporary = path_ + ".tmp." + std::to_string(getpid());
  std::string problem;
  auto note_failure = [&](const std::string& file) {
    if (problem.empty()) problem = file + ": " + errno_text();
  };
  std::FILE* out = rank_ == 0 ? std::fopen(temporary.c_str(), "w") : nullptr;
  if (rank_ == 0 && out == nullptr) note_failure(temporary);
  auto write_out = [&](const char* data, size_t bytes) {
    if (out != nullptr && !write_all(out, data, bytes)) note_failure(temporary);
  };
  const std::string head = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  write_out(head.data(), head.size());
  if (std::fseek(part_, static_cast<long>(kPartHead.size()), SEEK_SET) != 0) note_failure(part_path_.string());
  std::vector<char> chunk(kChunkBytes);
  for (int r = 0; r < ranks; ++r) {
    if (r > 0) write_out(",\n", 2);
    const auto size = static_cast<uint64_t>(sizes[static_cast<size_t>(r)]);
    for (uint64_t done = 0; done < size; done += kChunkBytes) {
      const auto n = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, size - done));
      if (r == rank_ && std::fread(chunk.data(), 1, n, part_) != n) {
        note_failure(part_path_.string());
        std::fill_n(chunk.begin(), n, ' ');
      }
      if (r != 0) collectives.broadcast(chunk.data(), n, STRATA_U8, r);
      write_out(chunk.data(), n);
    }
  }
  if (out != nullptr) {
    const std::string tail = "\n]}\n";
    write_out(tail.data(), tail.size());
    if (std::fflush(out) != 0 || ::fsync(fileno(out)) != 0) note_failure(temporary);
    if (std::fclose(out) != 0) note_failure(temporary);
    if (problem.empty() && std::rename(temporary.c_str(), path_.c_str()) != 0) note_failure(path_);
    if (!problem.empty()) std::remove(temporary.c_str());
    sync_folder(path_);
  }
  const int32_t failed_here = problem.empty() ? 0 : 1;
  int32_t failed = 0;
  collectives.allreduce(&failed_here, &failed, 1, STRATA_I32, STRATA_MAX);
  if (failed != 0) {
    // Nothing is lost: every rank keeps its own events.
    file.unlock();
    const std::string kept = finish_alone("");
    throw Error(STRATA_ERR_INTERNAL,
                "the timeline could not be written" + (problem.empty() ? std::string(" on rank 0") : ": " + problem) +
                    "; this rank's events are in " + (kept.empty() ? part_path_.string() : kept));
  }
  std::fclose(part_);
  part_ = nullptr;
  std::remove(part_path_.c_str());
}

}  // namespace strata::rt

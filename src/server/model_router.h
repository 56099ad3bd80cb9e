// The models a server serves, and which one a request gets (docs/server.md, "Several models").
//
// Each served model is a slot: its spec (model_loader.h), a load state, and while loaded its backend and
// its own Scheduler (lanes, queue, memory admission inside the model). A request takes a ModelLease on
// the model its `model` field names; the lease keeps the model loaded until the request's response has
// ended, and gives the route the model's backend and scheduler.
//
//   Acquire: loaded -> a lease at once. Unloaded (or failed before) -> this thread loads it; concurrent
//   requests for it wait for that same load. Loading/unloading by another thread -> wait for it.
//   Loading first makes room: the model's cost (weights + KV budget, ModelCost) must fit --max-loaded
//   and the memory budget beside the models already loaded; if not, idle loaded models (no leases) are
//   unloaded, least recently used first. If that is not enough because models serving requests hold the
//   room, the load waits up to Options::room_wait_s for their leases to end (each release wakes it, and
//   a model that went idle is unloaded for it), then fails: kBusy (a 503; retry later). kTooLarge (the
//   model does not fit even the empty budget, a 507) fails at once. A failed load fails the requests that waited for it, naming the file
//   and the reason; the next request tries again.
//   Unload (LRU, idle, shutdown): the scheduler drains (only cancelled leftovers can remain: no lease is
//   held), FlushCache makes the model's prompt cache durable on SSD, then the backend is freed, so a
//   reload restores its prefixes from SSD.
//   --idle-unload: a reaper thread unloads a model no lease has touched for that long.
//
// Single-model mode (`ember serve MODEL`): one slot, loaded by the caller, never unloaded, that serves
// every name (OpenAI clients send "gpt-4o"); the server behaves exactly as it did with one backend.
//
// Thread-safety: every method may be called from any thread. mu_ guards the slots' state; it is never
// held across a load, an unload, a backend or scheduler call, or a wait on the Env's clock other than
// the reaper's. A loaded slot's backend and scheduler are written only by the thread that moved the slot
// to kLoading or kUnloading (no other thread touches them then) and read by lease holders while it is
// kLoaded, which is why they are not GUARDED_BY.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/backend.h"
#include "server/model_loader.h"
#include "server/scheduler.h"
#include "util/env.h"
#include "util/mutex.h"

namespace ember::server {

class ModelRouter;

// What a route needs of the model serving its request.
struct ServedModel {
  std::string id;    // the name replies carry in `model`
  std::string path;  // its file ("" in single-model mode, where the options say it)
  InferenceBackend* backend = nullptr;
  Scheduler* scheduler = nullptr;
};

// Keeps one model loaded while held (move-only; released on destruction or Release()).
class ModelLease {
 public:
  ModelLease() = default;
  ~ModelLease() { Release(); }
  ModelLease(ModelLease&& other) noexcept { *this = std::move(other); }
  ModelLease& operator=(ModelLease&& other) noexcept;
  ModelLease(const ModelLease&) = delete;
  ModelLease& operator=(const ModelLease&) = delete;

  explicit operator bool() const { return router_ != nullptr; }
  const ServedModel& model() const { return model_; }
  const std::string& id() const { return model_.id; }
  InferenceBackend& backend() const { return *model_.backend; }
  Scheduler& scheduler() const { return *model_.scheduler; }
  void Release();

 private:
  friend class ModelRouter;
  ModelRouter* router_ = nullptr;
  size_t slot_ = 0;
  bool touch_ = true;  // releasing it counts as a use (LRU, idle): not for monitoring leases
  ServedModel model_;
};

enum class ModelState { kUnloaded, kLoading, kLoaded, kUnloading, kFailed };
const char* ModelStateName(ModelState s);  // "unloaded", "loading", "loaded", "unloading", "failed"

// One model as /v1/models and /stats show it.
struct ModelStatus {
  ModelSpec spec;
  ModelState state = ModelState::kUnloaded;
  int leases = 0;                  // requests (and monitoring reads) holding it now
  size_t waiting = 0;              // requests waiting for its load (or unload) to end
  double idle_s = 0;               // since its last use (0 when never used)
  uint64_t charged_bytes = 0;      // weights + KV budget, while it holds room
  uint64_t kv_budget_bytes = 0;
  std::string last_error;          // the last failed load's reason ("" none)
  uint64_t loads = 0, unloads = 0, load_failures = 0;
  double last_load_s = 0;          // how long its last load took
};

struct RouterStats {
  bool multi = false;
  size_t known = 0, loaded = 0;
  uint64_t loads = 0, load_failures = 0, lru_unloads = 0, idle_unloads = 0;
  uint64_t refused = 0;            // loads refused for room (kBusy, kTooLarge)
  size_t max_loaded = 0;
  double idle_unload_s = 0;
  uint64_t memory_budget_bytes = 0, charged_bytes = 0;
};

enum class AcquireError { kNone, kUnknownModel, kNoModelNamed, kNotRunnable, kLoadFailed, kBusy, kTooLarge, kStopping };

struct Acquired {
  ModelLease lease;  // held when error == kNone
  AcquireError error = AcquireError::kNone;
  std::string message;  // names the model, the file, the numbers or the known names
  bool ok() const { return error == AcquireError::kNone; }
};

class ModelRouter {
 public:
  struct Options {
    size_t max_loaded = 0;             // models loaded at once; 0 = as many as memory allows
    double idle_unload_s = 0;          // unload a model unused this long; 0 = never
    uint64_t memory_budget_bytes = 0;  // weights + KV budgets of the loaded models; 0 = no limit
    size_t max_queue = 64;             // each model's Scheduler (waiting generations before 429)
    double room_wait_s = 0;            // how long a load waits for models in use to free room; 0 = not at all
    Env* env = Env::Default();         // last-use times, the reaper's and room waits
  };

  // Several models, none loaded yet. `loader` must outlive the router.
  ModelRouter(std::vector<ModelSpec> models, ModelLoader* loader, Options options);
  // One model, already loaded, never unloaded, serving every name. `backend` must outlive the router.
  ModelRouter(InferenceBackend* backend, std::string id, size_t max_queue, Env* env);
  ~ModelRouter();  // drains what is still loaded (no grace) and frees what it loaded
  ModelRouter(const ModelRouter&) = delete;
  ModelRouter& operator=(const ModelRouter&) = delete;
  friend class ModelLease;

  bool multi() const { return loader_ != nullptr; }
  // The model `name` selects, leased (loading it if needed; see the header comment). Single-model mode:
  // the one model, whatever the name. An empty name selects the only runnable model when there is one.
  Acquired Acquire(const std::string& name) EXCLUDES(mu_);
  // Leases on every loaded model, for monitoring (/stats, /metrics, /slots) and flushing: loads nothing,
  // and releasing them is not a use.
  std::vector<ModelLease> LeaseLoaded() EXCLUDES(mu_);
  std::vector<ModelStatus> List() const EXCLUDES(mu_);
  RouterStats stats() const EXCLUDES(mu_);
  // The runnable models' names, sorted (what a 404 lists).
  std::vector<std::string> RunnableNames() const;
  // "The model 'x' does not exist. This server serves: a, b" (the name and the list bounded).
  std::string NotFoundMessage(const std::string& name) const;

  // Refuses new leases that would load (kStopping), waits for loads and unloads in progress, then
  // drains every loaded model's scheduler within `grace` in all (docs: Scheduler::Shutdown). Idempotent.
  void Drain(std::chrono::milliseconds grace) EXCLUDES(mu_);
  // FlushCache of every loaded model; the first error, naming its model.
  Status FlushAll() EXCLUDES(mu_);

 private:
  struct Slot {
    ModelState state = ModelState::kUnloaded;
    int leases = 0;
    size_t waiting = 0;       // requests waiting in Acquire for this slot's load or unload to end
    int64_t last_use_us = 0;
    uint64_t charge = 0;      // weights + kv, from the grant until the unload ends
    uint64_t kv = 0;
    ServedModel model;        // set while kLoaded
    std::string last_error;
    uint64_t loads = 0, unloads = 0, load_failures = 0;
    double last_load_s = 0;
  };
  // Owned by the thread that moved the slot to kLoading/kUnloading; read by lease holders while kLoaded.
  struct Owned {
    std::unique_ptr<InferenceBackend> backend;  // null in single-model mode (the caller's)
    std::unique_ptr<Scheduler> scheduler;
  };
  struct Room {
    uint64_t kv = 0;
    AcquireError error = AcquireError::kNone;
    std::string message;
  };
  enum class UnloadReason { kLru, kIdle };

  // The slot `name` selects, or the failure that says why none does.
  bool Resolve(const std::string& name, size_t* index, Acquired* failure) const;
  ModelLease LeaseLocked(size_t i, bool touch) REQUIRES(mu_);
  void ReleaseLease(size_t i, bool touch) EXCLUDES(mu_);
  // Runs on the thread that moved slot i to kLoading: estimate, make room, load, start its scheduler.
  Acquired Load(size_t i) EXCLUDES(mu_);
  Acquired FailLoad(size_t i, AcquireError error, std::string message, bool failed) EXCLUDES(mu_);
  Room MakeRoom(size_t i, const ModelCost& cost) EXCLUDES(mu_);
  // The room test for slot i under the lock: the grant, or a victim to unload (marked kUnloading), or a
  // reason to wait (`*wait`) or to fail.
  Room TryRoomLocked(size_t i, const ModelCost& cost, size_t* victim, bool* wait) REQUIRES(mu_);
  // Why slot i's load is refused for room; `waited_s` > 0 says it waited that long first.
  std::string BusyMessageLocked(size_t i, uint64_t need, double waited_s) const REQUIRES(mu_);
  // Unloads slot i, which this thread moved to kUnloading.
  void Unload(size_t i, UnloadReason why) EXCLUDES(mu_);
  void ReaperLoop() EXCLUDES(mu_);
  // Loaded slots idle past --idle-unload (marked kUnloading); `*next` gets the next expiry.
  std::vector<size_t> IdleVictimsLocked(int64_t now, int64_t* next) REQUIRES(mu_);
  bool SettlingLocked() const REQUIRES(mu_);  // a load or an unload is in progress

  const std::vector<ModelSpec> specs_;
  ModelLoader* const loader_;  // null: single-model mode
  const Options opts_;
  Env* const env_;
  mutable Mutex mu_;
  CondVar cv_;  // a slot's state or leases changed, or stopping began
  std::vector<Slot> slots_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t refused_ GUARDED_BY(mu_) = 0;
  uint64_t lru_unloads_ GUARDED_BY(mu_) = 0;
  uint64_t idle_unloads_ GUARDED_BY(mu_) = 0;
  std::vector<Owned> owned_;  // see Owned
  std::thread reaper_;
};

}  // namespace ember::server

#include "server/model_router.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "cache/cache_options.h"
#include "server/path_redaction.h"
#include "util/progress.h"
#include "util/stopwatch.h"

namespace ember::server {

namespace {

constexpr size_t kNone = std::numeric_limits<size_t>::max();
constexpr size_t kMaxNamesListed = 50;  // a 404 lists at most this many names

bool HoldsRoom(ModelState s, uint64_t charge) {
  return s == ModelState::kLoaded || s == ModelState::kUnloading || (s == ModelState::kLoading && charge > 0);
}

std::string NameList(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < kMaxNamesListed; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > kMaxNamesListed) out += " and " + std::to_string(names.size() - kMaxNamesListed) + " more";
  return names.empty() ? "(none)" : out;
}

// A client's name echoed in an error, bounded. (Appends: GCC 12 warns falsely on "'" + s + "'" here.)
std::string Echo(const std::string& name) {
  std::string out = "'";
  out.append(name, 0, 100);
  out += '\'';
  return out;
}

std::string LoadFailure(const ModelSpec& spec, const Status& why) {
  return "The model " + Echo(spec.name) + " failed to load" + (spec.path.empty() ? "" : " from " + spec.path) + ": " +
         why.ToString();
}

}  // namespace

const char* ModelStateName(ModelState s) {
  switch (s) {
    case ModelState::kUnloaded: return "unloaded";
    case ModelState::kLoading: return "loading";
    case ModelState::kLoaded: return "loaded";
    case ModelState::kUnloading: return "unloading";
    case ModelState::kFailed: return "failed";
  }
  return "?";
}

ModelLease& ModelLease::operator=(ModelLease&& other) noexcept {
  if (this != &other) {
    Release();
    router_ = other.router_;
    slot_ = other.slot_;
    touch_ = other.touch_;
    model_ = std::move(other.model_);
    other.router_ = nullptr;
  }
  return *this;
}

void ModelLease::Release() {
  if (router_ == nullptr) return;
  ModelRouter* router = router_;
  router_ = nullptr;
  router->ReleaseLease(slot_, touch_);
}

ModelRouter::ModelRouter(std::vector<ModelSpec> models, ModelLoader* loader, Options options)
    : specs_(std::move(models)), loader_(loader), opts_(options),
      env_(options.env != nullptr ? options.env : Env::Default()), owned_(specs_.size()) {
  {
    MutexLock lock(&mu_);
    slots_.resize(specs_.size());
  }
  if (opts_.idle_unload_s > 0) reaper_ = std::thread([this] { ReaperLoop(); });
}

namespace {

ModelSpec SingleSpec(const std::string& id, const InferenceBackend& backend) {
  ModelSpec s;
  s.name = id;
  s.source = "MODEL";
  s.context_length = backend.context_length();
  return s;
}

}  // namespace

ModelRouter::ModelRouter(InferenceBackend* backend, std::string id, size_t max_queue, Env* env)
    : specs_({SingleSpec(id, *backend)}), loader_(nullptr), opts_(Options{.max_queue = max_queue, .env = env}),
      env_(env != nullptr ? env : Env::Default()), owned_(1) {
  owned_[0].scheduler = std::make_unique<Scheduler>(backend, max_queue, env_);
  MutexLock lock(&mu_);
  slots_.resize(1);
  slots_[0].state = ModelState::kLoaded;
  slots_[0].model = {std::move(id), "", backend, owned_[0].scheduler.get()};
  slots_[0].loads = 1;
}

ModelRouter::~ModelRouter() {
  Drain(std::chrono::milliseconds(0));
  for (Owned& o : owned_) {
    o.scheduler.reset();  // before its backend
    o.backend.reset();
  }
}

std::vector<std::string> ModelRouter::RunnableNames() const {
  std::vector<std::string> names;
  for (const ModelSpec& s : specs_) {
    if (s.runnable) names.push_back(s.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool ModelRouter::Resolve(const std::string& name, size_t* index, Acquired* failure) const {
  if (!multi()) {
    *index = 0;
    return true;
  }
  if (name.empty()) {
    const std::vector<std::string> names = RunnableNames();
    if (names.size() == 1) return Resolve(names[0], index, failure);
    failure->error = AcquireError::kNoModelNamed;
    failure->message = "'model' is required: this server serves several models: " + NameList(names);
    return false;
  }
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (specs_[i].name != name) continue;
    if (!specs_[i].runnable) {
      failure->error = AcquireError::kNotRunnable;
      // A client gets the name, never where the file is (path_redaction.h).
      failure->message = "The model " + Echo(name) + " cannot run: " + WithoutPaths(specs_[i].why_not);
      return false;
    }
    *index = i;
    return true;
  }
  failure->error = AcquireError::kUnknownModel;
  failure->message = NotFoundMessage(name);
  return false;
}

std::string ModelRouter::NotFoundMessage(const std::string& name) const {
  return "The model " + Echo(name) + " does not exist. This server serves: " + NameList(RunnableNames());
}

ModelLease ModelRouter::LeaseLocked(size_t i, bool touch) {
  Slot& s = slots_[i];
  ++s.leases;
  if (touch) s.last_use_us = env_->MonotonicMicros();
  ModelLease lease;
  lease.router_ = this;
  lease.slot_ = i;
  lease.touch_ = touch;
  lease.model_ = s.model;
  return lease;
}

void ModelRouter::ReleaseLease(size_t i, bool touch) {
  {
    MutexLock lock(&mu_);
    Slot& s = slots_[i];
    --s.leases;
    if (touch) s.last_use_us = env_->MonotonicMicros();
  }
  cv_.SignalAll();  // the reaper's next expiry moved; a load waiting for room may find a victim
}

Acquired ModelRouter::Acquire(const std::string& name) {
  Acquired out;
  size_t i = 0;
  if (!Resolve(name, &i, &out)) return out;
  {
    MutexLock lock(&mu_);
    while (true) {
      Slot& s = slots_[i];
      if (s.state == ModelState::kLoaded) {
        out.lease = LeaseLocked(i, /*touch=*/true);
        return out;
      }
      if (stopping_) {
        out.error = AcquireError::kStopping;
        out.message = "the server is shutting down";
        return out;
      }
      if (s.state == ModelState::kUnloaded || s.state == ModelState::kFailed) {
        s.state = ModelState::kLoading;  // this thread loads it; later requests wait for this load
        break;
      }
      // Each waiting request holds a connection worker, for up to --load-wait when the load waits for
      // room: as many may wait as the model's queue would hold, the rest are refused now.
      if (s.waiting >= opts_.max_queue) {
        out.error = AcquireError::kBusy;
        out.message = "The model " + Echo(specs_[i].name) + " is " + ModelStateName(s.state) + " and " +
                      std::to_string(s.waiting) + " requests already wait for it (--max-queue " +
                      std::to_string(opts_.max_queue) + "). Retry later";
        return out;
      }
      ++s.waiting;
      cv_.Wait(&mu_);  // loading or unloading on another thread
      --slots_[i].waiting;
    }
  }
  return Load(i);
}

Acquired ModelRouter::Load(size_t i) {
  const ModelSpec& spec = specs_[i];
  StatusOr<ModelCost> cost = loader_->Estimate(spec);
  if (!cost.ok()) return FailLoad(i, AcquireError::kLoadFailed, LoadFailure(spec, cost.status()), true);
  Room room = MakeRoom(i, *cost);
  if (room.error != AcquireError::kNone) return FailLoad(i, room.error, std::move(room.message), false);
  std::fprintf(stderr, "ember: loading model %s%s%s (KV budget %s)\n", spec.name.c_str(),
               spec.path.empty() ? "" : " from ", spec.path.c_str(), FormatBytes(room.kv).c_str());
  const Stopwatch took(env_);
  StatusOr<std::unique_ptr<InferenceBackend>> backend = loader_->Load(spec, room.kv);
  if (!backend.ok()) return FailLoad(i, AcquireError::kLoadFailed, LoadFailure(spec, backend.status()), true);
  Owned& o = owned_[i];
  o.backend = std::move(*backend);
  o.scheduler = std::make_unique<Scheduler>(o.backend.get(), opts_.max_queue, env_);
  std::fprintf(stderr, "ember: loaded model %s (%.2f s)\n", spec.name.c_str(), took.ElapsedSeconds());
  Acquired out;
  {
    MutexLock lock(&mu_);
    Slot& s = slots_[i];
    s.state = ModelState::kLoaded;
    s.model = {spec.name, spec.path, o.backend.get(), o.scheduler.get()};
    s.last_error.clear();
    s.last_load_s = took.ElapsedSeconds();
    ++s.loads;
    out.lease = LeaseLocked(i, /*touch=*/true);
  }
  cv_.SignalAll();
  return out;
}

Acquired ModelRouter::FailLoad(size_t i, AcquireError error, std::string message, bool failed) {
  if (failed) std::fprintf(stderr, "ember: %s\n", message.c_str());  // the full paths, for the operator
  message = WithoutPaths(message);  // what clients see (the reply, GET /v1/models' error): names only
  {
    MutexLock lock(&mu_);
    Slot& s = slots_[i];
    // A model refused for room is not broken: it is unloaded again, and its last error stays.
    s.state = failed ? ModelState::kFailed : ModelState::kUnloaded;
    s.charge = 0;
    s.kv = 0;
    if (failed) {
      s.last_error = message;
      ++s.load_failures;
    } else if (error == AcquireError::kBusy || error == AcquireError::kTooLarge) {
      ++refused_;
    }
  }
  cv_.SignalAll();
  Acquired out;
  out.error = error;
  out.message = std::move(message);
  return out;
}

ModelRouter::Room ModelRouter::MakeRoom(size_t i, const ModelCost& cost) {
  // Room held by models serving requests frees as their leases end (ReleaseLease signals cv_): wait for
  // that until the deadline, then give up with kBusy. A model kept busy without a pause can hold it
  // past the deadline; its requests are not held back for this load.
  const int64_t start = env_->MonotonicMicros();
  const int64_t deadline = start + static_cast<int64_t>(opts_.room_wait_s * 1e6);
  while (true) {
    size_t victim = kNone;
    {
      MutexLock lock(&mu_);
      while (true) {
        bool wait = false;
        Room room = TryRoomLocked(i, cost, &victim, &wait);
        if (victim != kNone) break;
        if (wait) {
          cv_.Wait(&mu_);  // an unload in progress will free room
          continue;
        }
        if (room.error != AcquireError::kBusy) return room;
        const int64_t now = env_->MonotonicMicros();
        if (now >= deadline) {
          if (opts_.room_wait_s > 0) {
            room.message = BusyMessageLocked(i, cost.weight_bytes + cost.min_kv_bytes, static_cast<double>(now - start) / 1e6);
          }
          return room;
        }
        env_->WaitUntil(&cv_, &mu_, deadline);
      }
    }
    Unload(victim, UnloadReason::kLru);
  }
}

ModelRouter::Room ModelRouter::TryRoomLocked(size_t i, const ModelCost& cost, size_t* victim, bool* wait) {
  Room room;
  const uint64_t budget = opts_.memory_budget_bytes;
  const uint64_t need = cost.weight_bytes + cost.min_kv_bytes;
  if (stopping_) {
    room.error = AcquireError::kStopping;
    room.message = "the server is shutting down";
    return room;
  }
  if (budget > 0 && need > budget) {
    room.error = AcquireError::kTooLarge;
    room.message = "The model " + Echo(specs_[i].name) + " needs at least " + FormatBytes(need) + " (weights " +
                   FormatBytes(cost.weight_bytes) + " + KV for one full-context sequence " +
                   FormatBytes(cost.min_kv_bytes) + "), more than the whole memory budget of " +
                   FormatBytes(budget) + " (--memory-budget)";
    return room;
  }
  // What the other models hold, and what of it stays once every idle model and every unload in
  // progress is gone (`kept`: models serving requests, or being loaded).
  uint64_t held = 0, kept = 0;
  size_t count = 0, kept_count = 0;
  bool unloading = false;
  for (size_t j = 0; j < slots_.size(); ++j) {
    const Slot& s = slots_[j];
    if (j == i || !HoldsRoom(s.state, s.charge)) continue;
    held += s.charge;
    ++count;
    unloading = unloading || s.state == ModelState::kUnloading;
    if (s.state == ModelState::kLoading || (s.state == ModelState::kLoaded && s.leases > 0)) {
      kept += s.charge;
      ++kept_count;
    }
  }
  auto fits = [&](uint64_t bytes, size_t models) {
    return (opts_.max_loaded == 0 || models < opts_.max_loaded) && (budget == 0 || bytes + need <= budget);
  };
  if (fits(held, count)) {
    room.kv = cost.want_kv_bytes;
    if (budget > 0) room.kv = std::min(room.kv, budget - held - cost.weight_bytes);
    room.kv = std::max(room.kv, cost.min_kv_bytes);
    slots_[i].kv = room.kv;
    slots_[i].charge = cost.weight_bytes + room.kv;
    return room;
  }
  if (!fits(kept, kept_count)) {
    room.error = AcquireError::kBusy;
    room.message = BusyMessageLocked(i, need, 0);
    return room;
  }
  // Least recently used first, among the loaded models no request holds.
  for (size_t j = 0; j < slots_.size(); ++j) {
    const Slot& s = slots_[j];
    if (j == i || s.state != ModelState::kLoaded || s.leases > 0) continue;
    if (*victim == kNone || s.last_use_us < slots_[*victim].last_use_us) *victim = j;
  }
  if (*victim != kNone) {
    slots_[*victim].state = ModelState::kUnloading;
  } else {
    *wait = unloading;  // (always true here: only unloads in progress stand between kept and held)
  }
  return room;
}

std::string ModelRouter::BusyMessageLocked(size_t i, uint64_t need, double waited_s) const {
  std::string busy;
  uint64_t held = 0;
  for (size_t j = 0; j < slots_.size(); ++j) {
    const Slot& s = slots_[j];
    if (j == i || !HoldsRoom(s.state, s.charge)) continue;
    held += s.charge;
    busy += std::string(busy.empty() ? "" : ", ") + specs_[j].name + " (" + FormatBytes(s.charge) + ", " +
            (s.state == ModelState::kLoaded ? std::to_string(s.leases) + " requests" : ModelStateName(s.state)) + ")";
  }
  std::string limits = opts_.memory_budget_bytes > 0
                           ? "memory budget " + FormatBytes(opts_.memory_budget_bytes) + " (--memory-budget)"
                           : std::string("memory budget unlimited");
  if (opts_.max_loaded > 0) limits += ", --max-loaded " + std::to_string(opts_.max_loaded);
  return "The model " + Echo(specs_[i].name) + " cannot be loaded now: it needs " + FormatBytes(need) +
         " (weights + KV for one full-context sequence) and the models in use hold " + FormatBytes(held) + " (" +
         limits + "): " + busy +
         (waited_s > 0 ? ". Waited " + FormatDuration(waited_s) + " for them to finish (--load-wait)" : "") +
         ". Retry when they finish";
}

void ModelRouter::Unload(size_t i, UnloadReason why) {
  Owned& o = owned_[i];
  // No lease is held, so the queue holds only jobs whose clients left; they end at once.
  o.scheduler->Shutdown(std::chrono::milliseconds(0));
  const Status flushed = o.backend->FlushCache();
  if (!flushed.ok()) {
    std::fprintf(stderr, "ember: warning: model %s: cache flush before unload: %s\n", specs_[i].name.c_str(),
                 flushed.ToString().c_str());
  }
  o.scheduler.reset();
  o.backend.reset();
  std::fprintf(stderr, "ember: unloaded model %s (%s)\n", specs_[i].name.c_str(),
               why == UnloadReason::kLru ? "least recently used, to make room" : "idle");
  {
    MutexLock lock(&mu_);
    Slot& s = slots_[i];
    s.state = ModelState::kUnloaded;
    s.model = {};
    s.charge = 0;
    s.kv = 0;
    ++s.unloads;
    ++(why == UnloadReason::kLru ? lru_unloads_ : idle_unloads_);
  }
  cv_.SignalAll();
}

std::vector<size_t> ModelRouter::IdleVictimsLocked(int64_t now, int64_t* next) {
  const int64_t idle_us = static_cast<int64_t>(opts_.idle_unload_s * 1e6);
  std::vector<size_t> victims;
  *next = now + idle_us;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (s.state != ModelState::kLoaded || s.leases > 0) continue;
    if (s.last_use_us + idle_us <= now) {
      s.state = ModelState::kUnloading;
      victims.push_back(i);
    } else {
      *next = std::min(*next, s.last_use_us + idle_us);
    }
  }
  return victims;
}

void ModelRouter::ReaperLoop() {
  while (true) {
    std::vector<size_t> victims;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      int64_t next = 0;
      victims = IdleVictimsLocked(env_->MonotonicMicros(), &next);
      if (victims.empty()) {
        env_->WaitUntil(&cv_, &mu_, next);
        continue;
      }
    }
    for (size_t i : victims) Unload(i, UnloadReason::kIdle);
  }
}

std::vector<ModelLease> ModelRouter::LeaseLoaded() {
  std::vector<ModelLease> leases;
  MutexLock lock(&mu_);
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].state == ModelState::kLoaded) leases.push_back(LeaseLocked(i, /*touch=*/false));
  }
  return leases;
}

std::vector<ModelStatus> ModelRouter::List() const {
  std::vector<ModelStatus> out;
  MutexLock lock(&mu_);
  const int64_t now = env_->MonotonicMicros();
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    ModelStatus m;
    m.spec = specs_[i];
    m.state = s.state;
    m.leases = s.leases;
    m.waiting = s.waiting;
    m.idle_s = s.last_use_us > 0 && s.leases == 0 ? static_cast<double>(now - s.last_use_us) / 1e6 : 0;
    m.charged_bytes = s.charge;
    m.kv_budget_bytes = s.kv;
    m.last_error = s.last_error;
    m.loads = s.loads;
    m.unloads = s.unloads;
    m.load_failures = s.load_failures;
    m.last_load_s = s.last_load_s;
    out.push_back(std::move(m));
  }
  return out;
}

RouterStats ModelRouter::stats() const {
  RouterStats r;
  r.multi = multi();
  r.known = specs_.size();
  r.max_loaded = opts_.max_loaded;
  r.idle_unload_s = opts_.idle_unload_s;
  r.memory_budget_bytes = opts_.memory_budget_bytes;
  MutexLock lock(&mu_);
  for (const Slot& s : slots_) {
    r.loaded += s.state == ModelState::kLoaded ? 1 : 0;
    r.loads += s.loads;
    r.load_failures += s.load_failures;
    if (HoldsRoom(s.state, s.charge)) r.charged_bytes += s.charge;
  }
  r.refused = refused_;
  r.lru_unloads = lru_unloads_;
  r.idle_unloads = idle_unloads_;
  return r;
}

bool ModelRouter::SettlingLocked() const {
  for (const Slot& s : slots_) {
    if (s.state == ModelState::kLoading || s.state == ModelState::kUnloading) return true;
  }
  return false;
}

void ModelRouter::Drain(std::chrono::milliseconds grace) {
  const int64_t deadline = env_->MonotonicMicros() + std::chrono::microseconds(grace).count();
  std::vector<Scheduler*> schedulers;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
    while (SettlingLocked()) cv_.Wait(&mu_);
    for (const Slot& s : slots_) {
      if (s.state == ModelState::kLoaded) schedulers.push_back(s.model.scheduler);
    }
  }
  if (reaper_.joinable()) reaper_.join();
  // One after another within one deadline: the others' generations go on while one is waited for.
  for (Scheduler* s : schedulers) {
    const int64_t left = std::max<int64_t>(0, deadline - env_->MonotonicMicros());
    s->Shutdown(std::chrono::milliseconds(left / 1000));
  }
}

Status ModelRouter::FlushAll() {
  Status first = Status::Ok();
  for (ModelLease& lease : LeaseLoaded()) {
    Status st = lease.backend().FlushCache();
    if (!st.ok() && first.ok()) {
      first = multi() ? Status(st.code(), "model " + lease.id() + ": " + st.message()) : st;
    }
  }
  return first;
}

}  // namespace ember::server

// llama-server's Prometheus names (`llamacpp:*`), beside ember's own `ember_*` families, so a dashboard
// built for llama-server reads ember unchanged. The counters are fed by every finished generation
// (RecordGeneration), the gauges are refreshed from the scheduler and the backend at each scrape.
#pragma once

#include <span>

#include "server/backend.h"
#include "server/metrics.h"
#include "server/scheduler.h"

namespace ember::server {

void DefineLlamaMetrics(MetricsRegistry& m);
// One finished generation: prompt tokens computed and cached, generated tokens, their times.
void RecordLlamaGeneration(MetricsRegistry& m, const GenerationResult& r);
// Gauges and the counters derived from backend stats (decode steps), at scrape time. With several
// loaded models (`backends`, one each) the server is their sum: steps and KV bytes add up, busy slots
// per decode is their step-weighted mean.
void RefreshLlamaMetrics(MetricsRegistry& m, const Scheduler::Stats& q, std::span<const BackendStats> backends);

}  // namespace ember::server

// Small order statistics shared by the stability policy, the load client and the report.
// All functions take their input by value or const reference and never mutate the caller's data.
#pragma once

#include <vector>

namespace ember::bench {

// Median of `v`; 0 for an empty series (callers check emptiness where 0 would mislead).
double Median(std::vector<double> v);

// Percentile `p` in [0, 100] by linear interpolation between closest ranks (the common "type 7"
// definition, so p50 equals Median). 0 for an empty series.
double Percentile(std::vector<double> v, double p);

// max / min of a positive series: the spread the stability policy judges. Infinity when min <= 0
// (a zero or negative speed is a failed run, never a tight one); 1 for an empty series.
double SpreadRatio(const std::vector<double>& v);

double Mean(const std::vector<double>& v);

}  // namespace ember::bench

// The attributes of ONNX TfIdfVectorizer, parsed and checked once: shape inference
// (ops/text_features.cc) and the CPU kernel (kernels/cpu/tfidf_vectorizer.cc) read a TfIdfSpec.
//
// The pool lists the n-grams to count, grouped by length: ngram_counts[i] is where the
// (i + 1)-grams start in the pool (each takes i + 1 consecutive pool entries). The k-th n-gram of
// the pool, counting across the groups, is counted into output column ngram_indexes[k].
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/attribute.h"

namespace oneflow {

enum class TfIdfMode { kTf, kIdf, kTfIdf };

struct TfIdfSpec {
  TfIdfMode mode = TfIdfMode::kTf;
  int64_t min_gram = 1, max_gram = 1;
  int64_t max_skip = 0;                    // an n-gram's items may be up to max_skip + 1 apart
  std::vector<std::vector<int64_t>> grams;  // the pool's n-grams, in pool order
  std::vector<int64_t> columns;             // grams[k] counts into output column columns[k]
  // (column, weight) for each column an n-gram counts into, the last n-gram's weight where several
  // share one; empty: all 1. Sparse: a column index may be up to 2^31 (the output's width is
  // allocated at run time, never here).
  std::vector<std::pair<int64_t, float>> weights;
  int64_t width = 0;                        // output columns: max(columns) + 1
};

// Checks every attribute against the others (lengths, offsets, columns, weights); errors name
// `node_desc`. A string pool is refused as unsupported (string tensors are).
TfIdfSpec ParseTfIdfSpec(const AttrMap& attrs, const std::string& node_desc);

}  // namespace oneflow

"""TfIdfVectorizer against onnxruntime on random token rows larger than the ONNX node tests': every
mode, weights, skip-grams, n-gram ranges, repeated pool entries, 1-D and 2-D inputs, int32 and
int64 ids; plus the errors of malformed pools. Run with PYTHONPATH holding the binding and
ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")

import oneflow  # noqa: E402
from single_op import both, model  # noqa: E402

rng = np.random.default_rng(99)


def random_pool(vocab, counts_per_length):
    """A pool of distinct n-grams over ids [0, vocab): counts_per_length[i] of length i + 1."""
    pool, starts = [], []
    for i, count in enumerate(counts_per_length):
        starts.append(len(pool))
        seen = set()
        while len(seen) < count:
            seen.add(tuple(rng.integers(0, vocab, i + 1).tolist()))
        for g in sorted(seen):
            pool.extend(g)
    return pool, starts


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("min_gram,max_gram,max_skip", [(1, 1, 0), (1, 3, 0), (2, 3, 2), (1, 2, 4), (3, 3, 1)])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_matches_onnxruntime(mode, min_gram, max_gram, max_skip, dtype):
    vocab = 6  # small, so the rows repeat n-grams of the pool often
    pool, starts = random_pool(vocab, [5, 12, 20])
    n = 5 + 12 + 20
    columns = rng.permutation(n + 3)[:n].tolist()  # some columns stay empty
    weights = rng.uniform(0.5, 2.0, n).astype(np.float32).tolist()
    x = rng.integers(0, vocab, (7, 40)).astype(dtype)
    data, feeds = model("TfIdfVectorizer", [("x", x)], 9, mode=mode, min_gram_length=min_gram,
                        max_gram_length=max_gram, max_skip_count=max_skip, ngram_counts=starts,
                        ngram_indexes=columns, pool_int64s=pool, weights=weights if mode != "TF" else None)
    got, want = both(data, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert want.any(), "the rows should hit the pool"


def test_one_row_and_no_weights():
    pool, starts = random_pool(4, [3, 6])
    x = rng.integers(0, 4, 30).astype(np.int64)
    for mode in ("TF", "IDF", "TFIDF"):
        data, feeds = model("TfIdfVectorizer", [("x", x)], 9, mode=mode, min_gram_length=1, max_gram_length=2,
                            max_skip_count=3, ngram_counts=starts, ngram_indexes=list(range(9)), pool_int64s=pool)
        got, want = both(data, feeds)
        np.testing.assert_allclose(got, want)


def test_huge_skip_and_gram_limits_cost_nothing_extra():
    """max_skip_count and max_gram_length far beyond the row: the counts are those of the longest
    useful values (the kernel stops where no n-gram fits)."""
    pool, starts = random_pool(3, [2, 4])
    x = rng.integers(0, 3, (2, 12)).astype(np.int64)
    kw = dict(mode="TF", min_gram_length=1, ngram_counts=starts, ngram_indexes=list(range(6)), pool_int64s=pool)
    huge, feeds = model("TfIdfVectorizer", [("x", x)], 9, max_gram_length=2**30, max_skip_count=2**30, **kw)
    enough, _ = model("TfIdfVectorizer", [("x", x)], 9, max_gram_length=2, max_skip_count=11, **kw)
    with oneflow.Session(huge) as s:
        got = s.run(feeds)["y"]
    np.testing.assert_array_equal(got, both(enough, feeds)[1])


@pytest.mark.parametrize("attrs,message", [
    (dict(ngram_counts=[0, 4], pool_int64s=[1, 2, 3, 4, 5]), "not a multiple of 2"),
    (dict(ngram_counts=[0, 9], pool_int64s=[1, 2, 3]), "does not start a run of the pool"),
    (dict(ngram_indexes=[0, 1]), "ngram_indexes has 2 entries for the pool's 3 n-grams"),
    (dict(ngram_indexes=[0, -1, 2]), "outside"),
    (dict(mode="BM25"), "mode must be TF, IDF or TFIDF"),
    (dict(min_gram_length=3, max_gram_length=2), "min_gram_length <= max_gram_length"),
    (dict(weights=[1.0]), "weights has 1 entries for the pool's 3 n-grams"),
    (dict(pool_strings=["a", "b", "c"], pool_int64s=None), "string tensors"),
])
def test_malformed_attributes_are_named(attrs, message):
    kw = dict(mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=0, ngram_counts=[0],
              ngram_indexes=[0, 1, 2], pool_int64s=[4, 5, 6])
    kw.update(attrs)
    kw = {k: v for k, v in kw.items() if v is not None}
    data, _ = model("TfIdfVectorizer", [("x", np.zeros((2, 3), np.int64))], 9, **kw)
    with pytest.raises(oneflow.OneflowError, match=message):
        oneflow.Session(data)


def test_float_tokens_are_refused():
    data, _ = model("TfIdfVectorizer", [("x", np.zeros((2, 3), np.float32))], 9, mode="TF", min_gram_length=1,
                    max_gram_length=1, max_skip_count=0, ngram_counts=[0], ngram_indexes=[0], pool_int64s=[1])
    with pytest.raises(oneflow.OneflowError, match="int32 or int64 token ids"):
        oneflow.Session(data)

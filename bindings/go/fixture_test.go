// fixture_test.go — reads the models and numpy reference data the ctest fixtures write.
package oneflow

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// fixture is the path of name in the directory the environment variable env names (set by ctest:
// ONEFLOW_TEST_FIXTURE for tests/c_api/make_c_api_fixture.py, ONEFLOW_TEST_TRAIN for
// tests/train/make_train_fixture.py, ONEFLOW_TEST_DTYPES for
// tests/c_api/make_dtype_fixture.py). Without it the test is skipped, saying why.
func fixture(t testing.TB, env, name string) string {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		t.Skipf("%s is not set: run through ctest (tests/go), which writes the fixture", env)
	}
	return filepath.Join(dir, name)
}

func capi(t testing.TB, name string) string   { return fixture(t, "ONEFLOW_TEST_FIXTURE", name) }
func dtypes(t testing.TB, name string) string { return fixture(t, "ONEFLOW_TEST_DTYPES", name) }

// readRaw reads a little-endian raw array written by numpy.
func readRaw[T Element](t testing.TB, path string) []T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var zero T
	out := make([]T, len(b)/binary.Size(zero))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := binary.Read(f, binary.LittleEndian, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func readBytes(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// must(f())(t) is f's value, failing t on f's error (Go cannot pass t next to a multi-value call).
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func closeAll(ts ...interface{ Close() error }) {
	for _, t := range ts {
		t.Close()
	}
}

func assertClose(t testing.TB, what string, got, want []float32, tol float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		d := got[i] - want[i]
		if d > tol || d < -tol {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func assertEqual[T comparable](t testing.TB, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

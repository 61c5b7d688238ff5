// The `oneflow` command-line tool (placeholder until the CLI lands).
#include <cstdio>

int main() {
  std::puts("oneflow CLI");
  return 0;
}

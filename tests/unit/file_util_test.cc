// WriteFileAtomically: complete writes replace the file; a failing writer leaves the old file intact.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "base/error.h"
#include "base/file_util.h"
#include "../test_support.h"

namespace oneflow {
namespace {

std::string MakeTempDir() {
  char tmpl[] = "/tmp/oneflow_file_util_XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  EXPECT_NE(dir, nullptr);
  return dir ? dir : "/tmp";
}

int CountEntries(const std::string& dir) {
  int n = 0;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = ::readdir(d)) n += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
  ::closedir(d);
  return n;
}

TEST(FileUtil, WritesAndReplaces) {
  std::string dir = MakeTempDir();
  std::string path = dir + "/model.bin";
  WriteFileAtomically(path, "first", 5);
  EXPECT_EQ(test_util::ReadFileBytes(path), "first");
  WriteFileAtomically(path, [](FileSink& s) {
    s.Write("sec", 3);
    s.Write("ond!", 4);
    EXPECT_EQ(s.bytes_written(), 7u);
  });
  EXPECT_EQ(test_util::ReadFileBytes(path), "second!");
  EXPECT_EQ(CountEntries(dir), 1);  // no temporary left behind
}

TEST(FileUtil, FailingWriterLeavesOldFileAndNoTemporary) {
  std::string dir = MakeTempDir();
  std::string path = dir + "/model.bin";
  WriteFileAtomically(path, "keep me", 7);
  EXPECT_THROW(WriteFileAtomically(path,
                                   [](FileSink& s) {
                                     s.Write("partial", 7);
                                     Fail(ErrorCode::kRuntime, "simulated crash in the middle of a save");
                                   }),
               Error);
  EXPECT_EQ(test_util::ReadFileBytes(path), "keep me");
  EXPECT_EQ(CountEntries(dir), 1);
}

TEST(FileUtil, MissingDirectoryIsAClearError) {
  try {
    WriteFileAtomically("/nonexistent-dir-oneflow/x.bin", "x", 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-oneflow/x.bin"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace oneflow

// WriteOutputFiles: creates the folder, writes each file whole, and names what could not be written.
#include "client/output_files.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "testing/testdata.h"

namespace lockstep::client {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(OutputFilesTest, CreatesTheFolderAndWritesEveryFile) {
  const std::string dir = ::lockstep::testing::MakeTempDir("lockstep-output") + "/nested/out";
  ASSERT_TRUE(WriteOutputFiles(dir, {{"a.json", "{}\n"}, {"b.md", "# b"}}).ok());
  EXPECT_EQ(ReadAll(dir + "/a.json"), "{}\n");
  EXPECT_EQ(ReadAll(dir + "/b.md"), "# b");
}

TEST(OutputFilesTest, NamesTheFolderItCannotCreate) {
  const std::string file = ::lockstep::testing::MakeTempDir("lockstep-output") + "/plain-file";
  std::ofstream(file) << "x";
  const Status s = WriteOutputFiles(file + "/out", {{"a.json", "{}"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(file + "/out"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace lockstep::client

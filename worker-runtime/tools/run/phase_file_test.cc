#include "worker-runtime/tools/run/phase_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/status_test_macros.h"

namespace ringmaster::run {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid()))).string();
}

TEST(PhaseFileTest, WhatTheWriterSaysIsWhatTheReaderReads) {
  const std::string path = TempPath("phase_file_test");
  auto file = PhaseFile::Open(path);
  ASSERT_OK(file);
  auto phase = ReadPhase(path);
  ASSERT_OK(phase);
  EXPECT_FALSE(phase->in_collective);
  EXPECT_EQ(phase->step, 0);
  file->Enter(1234567890123);
  phase = ReadPhase(path);
  ASSERT_OK(phase);
  EXPECT_TRUE(phase->in_collective);
  EXPECT_EQ(phase->step, 1234567890123);
  file->Leave(1234567890123);
  phase = ReadPhase(path);
  ASSERT_OK(phase);
  EXPECT_FALSE(phase->in_collective);
  EXPECT_EQ(std::filesystem::file_size(path), kPhaseRecordSize) << "a record is rewritten in place";
  std::filesystem::remove(path);
}

TEST(PhaseFileTest, NoFileIsNotFoundAndAPartialRecordIsDataLoss) {
  const std::string path = TempPath("phase_file_test_bad");
  EXPECT_EQ(ReadPhase(path).status().code(), StatusCode::kNotFound);
  std::ofstream(path) << "C 0000";
  EXPECT_EQ(ReadPhase(path).status().code(), StatusCode::kDataLoss);
  std::ofstream(path) << "X 00000000000000000007\n";
  EXPECT_EQ(ReadPhase(path).status().code(), StatusCode::kDataLoss);
  std::filesystem::remove(path);
}

TEST(PhaseFileTest, WithoutAPathNothingIsWritten) {
  PhaseFile none;
  none.Enter(3);  // no file, no crash
  none.Leave(3);
}

}  // namespace
}  // namespace ringmaster::run

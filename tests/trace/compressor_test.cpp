// SPDX-License-Identifier: MIT
/** @file Online loop folding on synthetic call streams, through the writer and the reader. */
#include "trace/compressor.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/trace/synthetic.h"

using namespace hetopt::trace;
using namespace hetopt::trace::testing;

namespace {

struct Traced {
  Trace trace;
  uint64_t fileBytes = 0;
};

template <typename Body>
Traced record(const std::string& name, Body body) {
  std::string path = tempPath(name);
  Traced out;
  {
    Synth s(path);
    EXPECT_TRUE(s.ok());
    body(s);
    s.finish();
  }
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0);
  out.fileBytes = static_cast<uint64_t>(st.st_size);
  std::string error;
  EXPECT_TRUE(readTraceFile(path, &out.trace, &error)) << error;
  EXPECT_TRUE(out.trace.complete);
  unlink(path.c_str());
  return out;
}

// The loop_wkr pattern: set-up, N x (write -> kernel -> read), tear-down.
Traced wkr(int iterations) {
  return record("wkr" + std::to_string(iterations), [&](Synth& s) {
    s.malloc(0x10000, 4096);
    ObjectId mem = s.buffer(0xa0, 4096);
    ObjectId kernel = s.recorder().createHandle(ObjectKind::Kernel, 0xb0);
    for (int i = 0; i < iterations; ++i) {
      s.write(mem, 0x10000, 4096);
      s.kernel(kernel, mem);
      s.read(mem, 0x10000, 4096);
    }
    s.free(0x10000);
  });
}

}  // namespace

TEST(Compressor, LoopTraceDoesNotGrowWithTripCount) {
  // 40: more iterations than the times each call keeps (32), which are the same then.
  Traced small = wkr(40), large = wkr(100000);
  EXPECT_EQ(structure(small.trace), structure(large.trace));
  EXPECT_EQ(callCount(small.trace, "clEnqueueWriteBuffer"), 40u);
  EXPECT_EQ(callCount(large.trace, "clEnqueueWriteBuffer"), 100000u);
  EXPECT_EQ(callCount(large.trace, "clEnqueueNDRangeKernel"), 100000u);
  // Same records; only the varint widths of counts and sums differ (a few bytes each).
  EXPECT_LE(large.fileBytes, small.fileBytes + 48) << small.fileBytes << " vs " << large.fileBytes;
  EXPECT_LT(large.fileBytes, 3072u);
  // The whole loop is one node with one leaf per call.
  ASSERT_EQ(large.trace.threads.size(), 1u);
  size_t loops = 0;
  for (uint32_t e : large.trace.threads[0].entries) {
    const TraceNode& n = large.trace.nodes[e];
    if (!n.loop) continue;
    ++loops;
    EXPECT_EQ(n.iterations, 100000u);
    EXPECT_EQ(n.body.size(), 3u);
  }
  EXPECT_EQ(loops, 1u);
}

TEST(Compressor, BytesAndVersionsAreExactTotals) {
  Traced t = wkr(1000);
  TraceSummary s = summarize(t.trace);
  EXPECT_EQ(s.h2dBytes, 1000u * 4096);
  EXPECT_EQ(s.d2hBytes, 1000u * 4096);
  EXPECT_EQ(s.h2dTransfers, 1000u);
  ASSERT_EQ(s.byObject.size(), 1u);
  const TraceObject* seg = t.trace.object(s.byObject.begin()->first);
  ASSERT_NE(seg, nullptr);
  EXPECT_EQ(seg->kind, ObjectKind::Segment);
  EXPECT_EQ(seg->info.size, 4096u);
  ASSERT_GE(seg->info.site, 1u);
  EXPECT_EQ(t.trace.sites[seg->info.site - 1].frames.at(0).offset, 0x1234u);
  // The read defines a new version of the host segment each iteration: 1 (malloc) + 1000.
  for (const TraceNode& n : t.trace.nodes)
    if (!n.loop && t.trace.leafName(n) == "clEnqueueReadBuffer") {
      ASSERT_EQ(n.refs.size(), 2u);
      EXPECT_EQ(n.refs[1].vFirst, 2u);
      EXPECT_EQ(n.refs[1].vLast, 1001u);
    }
}

TEST(Compressor, NestedLoopsFoldInnerFirst) {
  Traced t = record("nested", [](Synth& s) {
    ObjectId a = s.buffer(0xa0, 64), b = s.buffer(0xa8, 64);
    ObjectId k = s.recorder().createHandle(ObjectKind::Kernel, 0xb0);
    s.malloc(0x20000, 8192);
    for (int i = 0; i < 50; ++i) {
      s.write(a, 0x20000, 64);
      for (int j = 0; j < 7; ++j) s.kernel(k, b);
      s.read(b, 0x20000, 64);
    }
  });
  EXPECT_EQ(callCount(t.trace, "clEnqueueNDRangeKernel"), 350u);
  const TraceNode* outer = nullptr;
  for (uint32_t e : t.trace.threads[0].entries)
    if (t.trace.nodes[e].loop) outer = &t.trace.nodes[e];
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->iterations, 50u);
  ASSERT_EQ(outer->body.size(), 3u);
  const TraceNode& inner = t.trace.nodes[outer->body[1]];
  ASSERT_TRUE(inner.loop);
  EXPECT_EQ(inner.iterations, 350u);
  EXPECT_EQ(inner.instances, 50u);
}

TEST(Compressor, VaryingInnerTripCountsStillFoldAndCountExactly) {
  Traced t = record("triangle", [](Synth& s) {
    ObjectId a = s.buffer(0xa0, 64);
    ObjectId k = s.recorder().createHandle(ObjectKind::Kernel, 0xb0);
    s.malloc(0x20000, 8192);
    for (int i = 0; i < 20; ++i) {
      for (int j = 0; j <= i; ++j) s.kernel(k, a);
      s.read(a, 0x20000, 64);
    }
  });
  EXPECT_EQ(callCount(t.trace, "clEnqueueNDRangeKernel"), 210u);
  EXPECT_EQ(callCount(t.trace, "clEnqueueReadBuffer"), 20u);
  EXPECT_LT(t.trace.nodes.size(), 12u);
}

TEST(Compressor, AlternatingObjectsDoNotFoldIntoOne) {
  Traced t = record("alternate", [](Synth& s) {
    ObjectId a = s.buffer(0xa0, 64), b = s.buffer(0xa8, 64);
    s.malloc(0x20000, 8192);
    for (int i = 0; i < 10; ++i) {
      s.write(a, 0x20000, 64);
      s.write(b, 0x20000, 64);
    }
  });
  // One loop of 10 over two distinct leaves, not one leaf of 20.
  const TraceNode* loop = nullptr;
  for (uint32_t e : t.trace.threads[0].entries)
    if (t.trace.nodes[e].loop) loop = &t.trace.nodes[e];
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->iterations, 10u);
  ASSERT_EQ(loop->body.size(), 2u);
  EXPECT_NE(t.trace.nodes[loop->body[0]].refs[0].obj, t.trace.nodes[loop->body[1]].refs[0].obj);
  EXPECT_EQ(t.trace.nodes[loop->body[0]].host.count, 10u);
}

TEST(Compressor, DistinctPreExistingObjectsDoNotFold) {
  Traced t = record("distinct", [](Synth& s) {
    s.malloc(0x20000, 8192);
    std::vector<ObjectId> bufs;
    for (int i = 0; i < 5; ++i) bufs.push_back(s.buffer(0xa0 + 8 * i, 64));
    for (ObjectId b : bufs) s.write(b, 0x20000, 64);
  });
  uint64_t writeLeaves = 0;
  for (const TraceNode& n : t.trace.nodes)
    if (!n.loop && t.trace.leafName(n) == "clEnqueueWriteBuffer") {
      ++writeLeaves;
      EXPECT_EQ(n.host.count, 1u);
    }
  EXPECT_EQ(writeLeaves, 5u);
}

TEST(Compressor, LoopLocalObjectsFoldAndStayDefined) {
  Traced t = record("local", [](Synth& s) {
    ObjectId mem = s.buffer(0xa0, 64);
    for (int i = 0; i < 1000; ++i) {
      uint64_t p = 0x100000 + static_cast<uint64_t>(i % 3) * 0x10000;  // addresses get reused
      s.malloc(p, 8192, 0x401111);
      s.write(mem, p, 8192);
      s.free(p);
    }
    s.malloc(0x900000, 8192, 0x402222);
    s.free(0x900000);
  });
  EXPECT_EQ(callCount(t.trace, "malloc"), 1001u);
  EXPECT_EQ(callCount(t.trace, "free"), 1001u);
  EXPECT_LT(t.trace.nodes.size(), 10u);
  // Every object a leaf names is defined (the reader checks that too).
  for (const TraceNode& n : t.trace.nodes)
    for (const Ref& r : n.refs) EXPECT_NE(t.trace.object(r.obj), nullptr);
  TraceSummary s = summarize(t.trace);
  EXPECT_EQ(s.h2dBytes, 1000u * 8192);
  ASSERT_EQ(s.byObject.size(), 1u) << "the 1000 temporaries are one loop-local object";
}

TEST(Compressor, WindowStaysBoundedOnNonRepeatingStreams) {
  ObjectTable objects;
  Compressor c(&objects, 8);
  for (int i = 0; i < 5000; ++i) {
    Leaf l;
    l.type = LeafType::Call;
    l.code = static_cast<uint16_t>(i % 97);
    l.host.add(1);
    l.refs.push_back(Ref{objects.create(ObjectKind::Mem), 0, kRefRead});
    c.append(std::move(l));
    std::vector<NodeId> done = c.takeFinal(false);
    c.release(done);
  }
  EXPECT_LE(c.window().size(), 2u * 8 + 2);
  EXPECT_LE(c.liveNodes(), 2u * 8 + 2);
}

TEST(Compressor, TimingSlotsFollowFoldedLeaves) {
  ObjectTable objects;
  Compressor c(&objects, 8);
  ObjectId mem = objects.create(ObjectKind::Mem);
  std::vector<uint32_t> slots;
  for (int i = 0; i < 100; ++i) {
    Leaf l;
    l.type = LeafType::Call;
    l.code = 7;
    l.host.add(1);
    l.refs.push_back(Ref{mem, 1, kRefWrite});
    slots.push_back(c.append(std::move(l), true));
  }
  EXPECT_EQ(c.pendingSlots(), 100u);
  DeviceAgg d;
  d.exec.add(250);
  for (uint32_t s : slots) c.deliver(s, &d);
  EXPECT_EQ(c.pendingSlots(), 0u);
  ASSERT_EQ(c.window().size(), 1u);
  const Node& loop = c.node(c.window()[0]);
  ASSERT_TRUE(loop.loop);
  const Leaf& leaf = c.node(loop.body[0]).leaf;
  EXPECT_EQ(leaf.host.count, 100u);
  EXPECT_EQ(leaf.device.exec.count, 100u);
  EXPECT_EQ(leaf.device.exec.total, 25000u);
}

// More commands in flight than the window holds: leaves written out before their timings came
// count those timings as missing (the census stays whole), and the late deliver() only frees the
// slot. Without this they were neither timed nor missing (seen with 192 commands in flight).
TEST(Compressor, TimingsStillPendingWhenWrittenOutCountAsMissing) {
  ObjectTable objects;
  Compressor c(&objects, 8);
  std::vector<uint32_t> slots;
  uint64_t missing = 0, leaves = 0;
  const int commands = static_cast<int>(Compressor::kHoldForTimings) + 400;
  for (int i = 0; i < commands; ++i) {
    Leaf l;
    l.type = LeafType::Call;
    l.code = static_cast<uint16_t>(i);  // nothing folds: every command is its own leaf
    l.host.add(1);
    l.refs.push_back(Ref{objects.create(ObjectKind::Mem), 0, kRefRead});
    slots.push_back(c.append(std::move(l), true));
    std::vector<NodeId> out = c.takeFinal(false);
    for (NodeId id : out) {
      missing += c.node(id).leaf.device.missing;
      ++leaves;
      EXPECT_EQ(c.node(id).pending, 0u);
    }
    c.release(out);
  }
  ASSERT_GT(leaves, 0u) << "the window never overflowed: the test does not test anything";
  EXPECT_EQ(missing, leaves) << "every leaf written out early carries its one timing as missing";
  DeviceAgg d;
  d.exec.add(100);
  for (uint32_t s : slots) c.deliver(s, &d);  // late: written-out leaves are not touched
  EXPECT_EQ(c.pendingSlots(), 0u);
  uint64_t timed = 0;
  std::vector<NodeId> rest = c.takeFinal(true);
  for (NodeId id : rest) timed += c.node(id).leaf.device.exec.count;
  EXPECT_EQ(timed + missing, static_cast<uint64_t>(commands));
  EXPECT_GE(timed, Compressor::kHoldForTimings) << "the held leaves got their timings";
  c.release(rest);
}

// The timeline's times: a folded leaf keeps its first calls' (a prefix, in order), the last call's
// end, and a timed command's device start and end in the stamp of its own call, wherever folding
// moved it; a command whose call kept no stamp changes no stamp.
TEST(Compressor, LeavesKeepTheirFirstCallsTimesAndTheirDeviceCommands) {
  ObjectTable objects;
  Compressor c(&objects, 8, 4);
  ObjectId mem = objects.create(ObjectKind::Mem);
  std::vector<uint32_t> slots;
  for (uint64_t i = 0; i < 10; ++i) {
    Leaf l;
    l.type = LeafType::Call;
    l.code = 7;
    l.host.add(10);
    l.refs.push_back(Ref{mem, 1, kRefWrite});
    l.stamps.push_back(Stamp{1000 * (i + 1), 10, 0, 0, 0});
    l.endNs = 1000 * (i + 1) + 10;
    slots.push_back(c.append(std::move(l), true));
  }
  // Delivered out of order, as events complete: the 3rd call's command first, the 9th's (no stamp).
  DeviceAgg d;
  d.exec.add(5);
  c.deliver(slots[2], &d, 90000, 90005);
  c.deliver(slots[8], &d, 70000, 70005);
  c.deliver(slots[0], &d, 50000, 50005);
  c.deliver(slots[1], nullptr);  // no timing: its stamp stays without device times
  ASSERT_EQ(c.window().size(), 1u);
  const Node& loop = c.node(c.window()[0]);
  ASSERT_TRUE(loop.loop);
  const Leaf& leaf = c.node(loop.body[0]).leaf;
  EXPECT_EQ(leaf.host.count, 10u);
  ASSERT_EQ(leaf.stamps.size(), 4u);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_EQ(leaf.stamps[i].startNs, 1000 * (i + 1));
  EXPECT_EQ(leaf.endNs, 10010u);
  EXPECT_EQ(leaf.stamps[0].deviceStart, 50000u);
  EXPECT_EQ(leaf.stamps[0].deviceEnd, 50005u);
  EXPECT_EQ(leaf.stamps[1].deviceEnd, 0u);
  EXPECT_EQ(leaf.stamps[2].deviceStart, 90000u);
  EXPECT_EQ(leaf.stamps[3].deviceEnd, 0u);
  EXPECT_EQ(leaf.device.exec.count, 3u);
  // A freed slot number comes back for a later call: the stamps let go of it on delivery.
  for (const Stamp& s : leaf.stamps) EXPECT_TRUE(s.slot == 0 || s.slot == slots[3]);
}

// pprof: profile.proto (github.com/google/pprof, proto/profile.proto), encoded by hand and gzipped.
//
//   Profile   1 sample_type  2 sample  3 mapping  4 location  5 function  6 string_table
//             9 time_nanos  10 duration_nanos  11 period_type  12 period  13 comment
//             14 default_sample_type
//   ValueType 1 type  2 unit                       (string table indices)
//   Sample    1 location_id (packed, leaf first)  2 value (packed)  3 label
//   Label     1 key  2 str  3 num  4 num_unit
//   Mapping   1 id  2 memory_start  3 memory_limit  4 file_offset  5 filename  6 build_id
//             7 has_functions  8 has_filenames  9 has_line_numbers  10 has_inline_frames
//   Location  1 id  2 mapping_id  3 address  4 line
//   Line      1 function_id  2 line
//   Function  1 id  2 name  3 system_name  4 filename  5 start_line
#include <fmt/format.h>
#include <zlib.h>

#include <map>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "model/callsites.h"
#include "export/export.h"
#include "util/protobuf_writer.h"

namespace allocscope {

namespace {

class StringTable {
 public:
  StringTable() { index(""); }
  uint64_t index(const std::string& s) {
    const auto [it, inserted] = ids_.try_emplace(s, strings_.size());
    if (inserted) strings_.push_back(s);
    return it->second;
  }
  const std::vector<std::string>& strings() const { return strings_; }

 private:
  std::unordered_map<std::string, uint64_t> ids_;
  std::vector<std::string> strings_;
};

ProtoWriter value_type(StringTable& st, const std::string& type, const std::string& unit) {
  ProtoWriter w;
  w.varint(1, st.index(type)).varint(2, st.index(unit));
  return w;
}

}  // namespace

std::string gzip_bytes(const std::string& data) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("zlib: deflateInit2 failed");
  }
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const size_t written = out.size() - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("zlib: deflate did not finish");
  out.resize(written);
  return out;
}

std::string export_pprof_raw(const StackCostSource& src, const ExportOptions& options) {
  const Profile& profile = src.profile;
  const auto symbolizer = stack_symbolizer(profile, options.source_lines);
  FrameFilter filter(profile, *symbolizer);

  StringTable st;
  ProtoWriter p;
  p.message(1, value_type(st, "calls", "count"));
  p.message(1, value_type(st, "time", "nanoseconds"));

  // Functions, by (name, file).
  std::map<std::pair<std::string, std::string>, uint64_t> functions;
  std::vector<ProtoWriter> function_msgs;
  auto function_id = [&](const std::string& name, const std::string& file) {
    const auto [it, inserted] = functions.try_emplace({name, file}, functions.size() + 1);
    if (inserted) {
      ProtoWriter f;
      f.varint(1, it->second).varint(2, st.index(name)).varint(3, st.index(name)).varint(4, st.index(file));
      function_msgs.push_back(std::move(f));
    }
    return it->second;
  };

  // Locations: one per frame address, one per operation leaf.
  std::map<uint64_t, uint64_t> location_of_address;
  std::map<unsigned, uint64_t> location_of_op;
  std::vector<ProtoWriter> location_msgs;
  std::map<int, bool> mapping_lines;  // mappings used -> any line info
  std::map<int, bool> mapping_functions;
  auto frame_location = [&](const FrameInfo& f) {
    const auto [it, inserted] = location_of_address.try_emplace(f.address, location_msgs.size() + 1);
    if (inserted) {
      ProtoWriter loc;
      loc.varint(1, it->second);
      if (f.module >= 0) {
        loc.varint(2, static_cast<uint64_t>(f.module) + 1);
        mapping_lines[f.module] = mapping_lines[f.module] || !f.source.empty();
        mapping_functions[f.module] = mapping_functions[f.module] || !f.function.empty();
      }
      loc.varint(3, f.address ? f.address - 1 : 0);
      if (!f.source.empty()) {
        for (const SourceFrame& s : f.source) {
          ProtoWriter line;
          line.varint(1, function_id(s.function.empty() ? f.name() : s.function, s.file));
          line.int64(2, s.line);
          loc.message(4, line);
        }
      } else {
        ProtoWriter line;
        line.varint(1, function_id(f.name(), ""));
        loc.message(4, line);
      }
      location_msgs.push_back(std::move(loc));
    }
    return it->second;
  };
  auto op_location = [&](unsigned op) {
    const auto [it, inserted] = location_of_op.try_emplace(op, location_msgs.size() + 1);
    if (inserted) {
      ProtoWriter loc, line;
      line.varint(1, function_id(op_label(op), ""));
      loc.varint(1, it->second).message(4, line);
      location_msgs.push_back(std::move(loc));
    }
    return it->second;
  };
  std::vector<std::vector<uint64_t>> stack_locations(profile.stacks.stacks().size());
  for (size_t i = 0; i < stack_locations.size(); ++i) {
    for (const FrameInfo* f : filter.program_frames(profile.stacks.stack(static_cast<StackIndex>(i)))) {
      stack_locations[i].push_back(frame_location(*f));
    }
  }

  const auto classes = src.table->classes();
  for (const auto& [key, cost] : src.costs) {
    const auto ns = static_cast<uint64_t>(std::llround(cost_ns(src, cost)));
    if (cost.calls == 0 && ns == 0) continue;
    std::vector<uint64_t> locs = {op_location(key.op)};
    if (key.stack != kNoStack) {
      const auto& frames = stack_locations[key.stack];
      locs.insert(locs.end(), frames.begin(), frames.end());
    }
    const uint64_t values[2] = {cost.calls, ns};
    ProtoWriter sample;
    sample.packed(1, locs).packed(2, values);
    ProtoWriter op_label_msg;
    op_label_msg.varint(1, st.index("op")).varint(2, st.index(op_label(key.op)));
    sample.message(3, op_label_msg);
    ProtoWriter class_label;
    class_label.varint(1, st.index("size_class"));
    class_label.varint(2, st.index(key.cls == kNoClass ? std::string("unknown") : std::string(classes[key.cls].label)));
    sample.message(3, class_label);
    if (cost.bytes > 0) {
      ProtoWriter bytes_label;
      const uint64_t bytes = cost.bytes > ~uint64_t{0} ? ~uint64_t{0} : static_cast<uint64_t>(cost.bytes);
      bytes_label.varint(1, st.index("bytes")).varint(3, bytes).varint(4, st.index("bytes"));
      sample.message(3, bytes_label);
    }
    p.message(2, sample);
  }

  const auto& modules = profile.modules.modules();
  for (const auto& [index, lines] : mapping_lines) {
    const Module& m = modules[static_cast<size_t>(index)];
    ProtoWriter mapping;
    mapping.varint(1, static_cast<uint64_t>(index) + 1).varint(2, m.start).varint(3, m.end + 1).varint(4, 0);
    mapping.varint(5, st.index(symbolizer->module_path(index)));
    mapping.boolean(7, mapping_functions[index]).boolean(8, lines).boolean(9, lines).boolean(10, lines);
    p.message(3, mapping);
  }
  for (const ProtoWriter& loc : location_msgs) p.message(4, loc);
  for (const ProtoWriter& f : function_msgs) p.message(5, f);

  // Numbers that refer to the string table come before it is written.
  const uint64_t period_type_calls = st.index("calls");
  const uint64_t count = st.index("count");
  const uint64_t default_type = st.index(options.weight == ExportWeight::Calls ? "calls" : "time");
  const uint64_t comment = st.index(fmt::format("allocscope profile of {}", profile.process ? profile.process->exe : profile.file));
  for (const std::string& s : st.strings()) p.bytes(6, s);
  if (profile.process) p.int64(9, static_cast<int64_t>(profile.process->info.start_realtime_ns));
  if (const auto wall = profile.wall_ns()) p.int64(10, static_cast<int64_t>(*wall));
  ProtoWriter period_type;
  period_type.varint(1, period_type_calls).varint(2, count);
  p.message(11, period_type);
  p.int64(12, 1);
  p.int64(13, static_cast<int64_t>(comment));
  p.int64(14, static_cast<int64_t>(default_type));
  return p.take();
}

std::string export_pprof(const StackCostSource& src, const ExportOptions& options) {
  return gzip_bytes(export_pprof_raw(src, options));
}

}  // namespace allocscope

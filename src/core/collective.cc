#include "ccsynth/core/collective.h"

#include <algorithm>
#include <cctype>

#include "ccsynth/core/error.h"

namespace ccsynth {

namespace {
constexpr CollectiveKind kBuiltinKinds[] = {
    CollectiveKind::kAllGather, CollectiveKind::kReduceScatter, CollectiveKind::kAllReduce,
    CollectiveKind::kAllToAll,  CollectiveKind::kBroadcast,     CollectiveKind::kReduce,
    CollectiveKind::kGather,    CollectiveKind::kScatter,
};

std::vector<int> unique_ranks(const std::vector<Slot>& slots) {
  std::vector<int> ranks;
  ranks.reserve(slots.size());
  for (const Slot& s : slots) ranks.push_back(s.rank);
  // The built-in collectives list their slots in rank order (a 4096-rank allgather's bound
  // sorted 16.8 M sorted ranks).
  if (!std::is_sorted(ranks.begin(), ranks.end())) std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}
}  // namespace

std::string to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather: return "allgather";
    case CollectiveKind::kReduceScatter: return "reducescatter";
    case CollectiveKind::kAllReduce: return "allreduce";
    case CollectiveKind::kAllToAll: return "alltoall";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kReduce: return "reduce";
    case CollectiveKind::kGather: return "gather";
    case CollectiveKind::kScatter: return "scatter";
    case CollectiveKind::kCustom: return "custom";
  }
  return "custom";
}

CollectiveKind parse_collective_kind(const std::string& name, const std::string& field) {
  std::string key;
  for (char c : name) {
    if (c == '_' || c == '-' || c == ' ') continue;
    key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (CollectiveKind kind : kBuiltinKinds) {
    if (to_string(kind) == key) return kind;
  }
  if (key == "custom") return CollectiveKind::kCustom;
  throw UserError("", field,
                  "unknown collective '" + name +
                      "' (expected allgather, reducescatter, allreduce, alltoall, broadcast, "
                      "reduce, gather, scatter)");
}

std::vector<CollectiveKind> builtin_collective_kinds() {
  return {std::begin(kBuiltinKinds), std::end(kBuiltinKinds)};
}

std::vector<int> Collective::pre_ranks(int chunk) const {
  return unique_ranks(chunks.at(chunk).pre);
}

std::vector<int> Collective::post_ranks(int chunk) const {
  return unique_ranks(chunks.at(chunk).post);
}

namespace {

std::vector<Slot> every_rank(int num_ranks, int index) {
  std::vector<Slot> out;
  for (int r = 0; r < num_ranks; ++r) out.push_back({r, index});
  return out;
}

// Fills kind-specific chunks; R ranks, C chunks per rank.
void add_chunks(Collective& c, int R, int C, int root) {
  switch (c.kind) {
    case CollectiveKind::kAllGather:
      c.input_chunks = C, c.output_chunks = R * C;
      for (int q = 0; q < R; ++q)
        for (int i = 0; i < C; ++i) c.chunks.push_back({{{q, i}}, every_rank(R, q * C + i)});
      return;
    case CollectiveKind::kReduceScatter:
      c.input_chunks = R * C, c.output_chunks = C, c.combining = true;
      for (int j = 0; j < R * C; ++j) c.chunks.push_back({every_rank(R, j), {{j / C, j % C}}});
      return;
    case CollectiveKind::kAllReduce:
      c.input_chunks = R * C, c.output_chunks = R * C, c.combining = true;
      for (int j = 0; j < R * C; ++j) c.chunks.push_back({every_rank(R, j), every_rank(R, j)});
      return;
    case CollectiveKind::kAllToAll:
      c.input_chunks = R * C, c.output_chunks = R * C;
      for (int s = 0; s < R; ++s)
        for (int d = 0; d < R; ++d)
          for (int i = 0; i < C; ++i) c.chunks.push_back({{{s, d * C + i}}, {{d, s * C + i}}});
      return;
    case CollectiveKind::kBroadcast:
      c.input_chunks = C, c.output_chunks = C;
      for (int i = 0; i < C; ++i) c.chunks.push_back({{{root, i}}, every_rank(R, i)});
      return;
    case CollectiveKind::kReduce:
      c.input_chunks = C, c.output_chunks = C, c.combining = true;
      for (int i = 0; i < C; ++i) c.chunks.push_back({every_rank(R, i), {{root, i}}});
      return;
    case CollectiveKind::kGather:
      c.input_chunks = C, c.output_chunks = R * C;
      for (int q = 0; q < R; ++q)
        for (int i = 0; i < C; ++i) c.chunks.push_back({{{q, i}}, {{root, q * C + i}}});
      return;
    case CollectiveKind::kScatter:
      c.input_chunks = R * C, c.output_chunks = C;
      for (int d = 0; d < R; ++d)
        for (int i = 0; i < C; ++i) c.chunks.push_back({{{root, d * C + i}}, {{d, i}}});
      return;
    case CollectiveKind::kCustom: break;
  }
  throw UserError("", "collective", "custom collectives are loaded from JSON, not built");
}

}  // namespace

Collective make_collective(CollectiveKind kind, int num_ranks, int chunks_per_rank, int root) {
  if (num_ranks < 1) throw UserError("", "ranks", "must be >= 1");
  if (chunks_per_rank < 1) throw UserError("", "chunks", "must be >= 1");
  // Slots the relation stores: allgather-like chunks list every rank as a destination.
  const double slots = static_cast<double>(num_ranks) * num_ranks * chunks_per_rank;
  if (slots > kMaxCollectiveSlots) {
    throw UserError(
        "", "chunks",
        std::to_string(chunks_per_rank) + " chunks per rank on " + std::to_string(num_ranks) +
            " ranks make a collective of " + std::to_string(static_cast<int64_t>(slots)) +
            " (rank, chunk) slots, more than the cap of " + std::to_string(kMaxCollectiveSlots));
  }
  if (root < 0 || root >= num_ranks) {
    throw UserError(
        "", "root",
        "rank " + std::to_string(root) + " is not in 0.." + std::to_string(num_ranks - 1));
  }
  Collective c;
  c.kind = kind;
  c.name = to_string(kind);
  c.num_ranks = num_ranks;
  c.chunks_per_rank = chunks_per_rank;
  c.root = root;
  add_chunks(c, num_ranks, chunks_per_rank, root);
  return c;
}

Collective make_alltonext(int num_ranks, int chunks_per_rank) {
  if (num_ranks < 2) throw UserError("", "ranks", "alltonext needs at least 2 ranks");
  if (chunks_per_rank < 1) throw UserError("", "chunks", "must be >= 1");
  Collective c;
  c.kind = CollectiveKind::kCustom;
  c.name = "alltonext";
  c.num_ranks = num_ranks;
  c.chunks_per_rank = chunks_per_rank;
  c.input_chunks = chunks_per_rank;
  c.output_chunks = chunks_per_rank;
  for (int r = 0; r + 1 < num_ranks; ++r)
    for (int i = 0; i < chunks_per_rank; ++i) c.chunks.push_back({{{r, i}}, {{r + 1, i}}});
  return c;
}

void validate(const Collective& c, const std::string& file) {
  if (c.num_ranks < 1) throw UserError(file, "ranks", "must be >= 1");
  if (c.input_chunks < 0 || c.output_chunks < 0) {
    throw UserError(file, "input_chunks", "buffer sizes must be >= 0");
  }
  // Output slots claimed so far, rank-major (ranks x output_chunks; slots are range-checked
  // before they are looked up).
  std::vector<char> outputs(static_cast<size_t>(c.num_ranks) * c.output_chunks, 0);
  for (size_t k = 0; k < c.chunks.size(); ++k) {
    const ChunkSpec& spec = c.chunks[k];
    const auto field_of = [k] { return "chunks[" + std::to_string(k) + "]"; };
    if (spec.pre.empty()) throw UserError(file, field_of() + ".pre", "chunk starts nowhere");
    if (!c.combining && spec.pre.size() != 1) {
      throw UserError(file, field_of() + ".pre",
                      "a non-combining chunk must start at exactly one slot");
    }
    auto check = [&](const Slot& s, int size, const char* f) {
      if (s.rank < 0 || s.rank >= c.num_ranks) {
        throw UserError(file, field_of() + f, "unknown rank " + std::to_string(s.rank));
      }
      if (s.index < 0 || s.index >= size) {
        throw UserError(file, field_of() + f,
                        "index " + std::to_string(s.index) + " outside buffer of " +
                            std::to_string(size) + " chunks");
      }
    };
    for (const Slot& s : spec.pre) check(s, c.input_chunks, ".pre");
    for (const Slot& s : spec.post) {
      check(s, c.output_chunks, ".post");
      char& claimed = outputs[static_cast<size_t>(s.rank) * c.output_chunks + s.index];
      if (claimed++ != 0) {
        throw UserError(file, field_of() + ".post",
                        "output slot (" + std::to_string(s.rank) + ", " + std::to_string(s.index) +
                            ") claimed by two chunks");
      }
    }
  }
}

std::ostream& operator<<(std::ostream& os, const Collective& c) {
  os << c.name << " over " << c.num_ranks << " ranks, " << c.chunks_per_rank << " chunks per rank, "
     << c.num_chunks() << " chunks, buffers " << c.input_chunks << " -> " << c.output_chunks
     << (c.combining ? " (combining)" : "");
  if (c.kind == CollectiveKind::kBroadcast || c.kind == CollectiveKind::kReduce ||
      c.kind == CollectiveKind::kGather || c.kind == CollectiveKind::kScatter) {
    os << ", root " << c.root;
  }
  return os;
}

}  // namespace ccsynth

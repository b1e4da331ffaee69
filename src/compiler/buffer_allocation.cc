#include "compiler/buffer_allocation.h"

#include <algorithm>
#include <unordered_map>

#include "ccsynth/core/error.h"

namespace ccsynth::compiler {

namespace {
constexpr BufferRef kNowhere{Buffer::kInput, -1};  // an absent location
bool is_nowhere(BufferRef ref) { return ref.index < 0; }
}  // namespace

int64_t BufferAllocator::key_of(int rank, int chunk, int num_chunks) {
  return static_cast<int64_t>(rank) * num_chunks + chunk;
}

int64_t BufferAllocator::slot_key(int rank, BufferRef ref) const {
  return slot_code(ref) * collective_.num_ranks + rank;
}

int BufferAllocator::holder(int rank, BufferRef ref) const {
  const std::vector<int>& held = holder_[rank];
  const auto code = static_cast<size_t>(slot_code(ref));
  return code < held.size() ? held[code] : -1;
}

void BufferAllocator::set_holder(int rank, BufferRef ref, int chunk) {
  std::vector<int>& held = holder_[rank];
  const auto code = static_cast<size_t>(slot_code(ref));
  if (code >= held.size()) {
    if (chunk < 0) return;
    held.resize(std::max(code + 1, held.size() * 2), -1);
  }
  held[code] = chunk;
}

BufferAllocator::BufferAllocator(const Algorithm& algorithm, bool inplace)
    : collective_(algorithm.collective),
      inplace_(inplace),
      holder_(algorithm.collective.num_ranks),
      post_location_(algorithm.collective.num_ranks),
      scratch_(algorithm.collective.num_ranks, 0) {
  const Collective& c = collective_;
  const int K = c.num_chunks();
  const size_t cells = static_cast<size_t>(c.num_ranks) * static_cast<size_t>(std::max(K, 0));
  location_.assign(cells, kNowhere);
  scratch_of_.assign(cells, kNowhere);
  last_read_.assign(cells, OrderKey{});
  read_.assign(cells, 0);
  first_post_.assign(cells, Slot{-1, -1});
  for (int k = 0; k < K; ++k) {
    // Like verify_algorithm, a later pre slot of the same rank replaces an earlier one.
    for (const Slot& s : c.chunks[k].pre) {
      const int64_t key = key_of(s.rank, k, K);
      if (!is_nowhere(location_[key])) set_holder(s.rank, location_[key], -1);
      const BufferRef ref = input_location(c, s, inplace_);
      location_[key] = ref;
      set_holder(s.rank, ref, k);
    }
    for (const Slot& s : c.chunks[k].post) {
      Slot& first = first_post_[key_of(s.rank, k, K)];
      if (first.rank < 0) first = s;
      std::vector<char>& posts = post_location_[s.rank];
      const auto code = static_cast<size_t>(slot_code(output_location(c, s, inplace_)));
      if (code >= posts.size()) posts.resize(std::max(code + 1, posts.size() * 2), 0);
      posts[code] = 1;
    }
  }
  // Liveness: the last access that reads each (rank, chunk) value.
  for (size_t i = 0; i < algorithm.ops.size(); ++i) {
    const ChunkOp& op = algorithm.ops[i];
    for (int k = op.chunk; k < op.chunk + op.count; ++k) {
      if (op.src < 0 || op.src >= c.num_ranks || op.dst < 0 || op.dst >= c.num_ranks) continue;
      const OrderKey send_key{op.step, 0, static_cast<int>(i), 0};
      const int64_t src_cell = key_of(op.src, k, K);
      last_read_[src_cell] = std::max(last_read_[src_cell], send_key);
      read_[src_cell] = 1;
      if (op.kind == OpKind::kReduce) {
        const OrderKey recv_key{op.step, 1, static_cast<int>(i), 0};
        const int64_t dst_cell = key_of(op.dst, k, K);
        last_read_[dst_cell] = std::max(last_read_[dst_cell], recv_key);
        read_[dst_cell] = 1;
      }
    }
  }
}

std::optional<BufferRef> BufferAllocator::location(int rank, int chunk) const {
  const BufferRef at = location_[key_of(rank, chunk, collective_.num_chunks())];
  if (is_nowhere(at)) return std::nullopt;
  return at;
}

bool BufferAllocator::is_post_location(int rank, BufferRef ref) const {
  const std::vector<char>& posts = post_location_[rank];
  const auto code = static_cast<size_t>(slot_code(ref));
  return code < posts.size() && posts[code];
}

bool BufferAllocator::live(int rank, int chunk, const OrderKey& key) const {
  const int64_t k = key_of(rank, chunk, collective_.num_chunks());
  if (first_post_[k].rank >= 0) return true;
  return read_[k] && key < last_read_[k];
}

BufferRef BufferAllocator::place_write(int rank, int chunk, const OrderKey& key, bool fresh) {
  const int64_t k = key_of(rank, chunk, collective_.num_chunks());
  const std::optional<BufferRef> old = location(rank, chunk);
  BufferRef target;
  const bool post = first_post_[k].rank >= 0;
  if (post) {
    target = output_location(collective_, first_post_[k], inplace_);
  } else if (!is_nowhere(scratch_of_[k])) {
    target = scratch_of_[k];
  } else {
    target = fresh_scratch(rank);
    scratch_of_[k] = target;
  }
  // In-place aliasing: never clobber another chunk's value that is still needed.
  const int held = holder(rank, target);
  if (fresh || (held >= 0 && held != chunk && live(rank, held, key))) {
    target = fresh_scratch(rank);
    if (!post) scratch_of_[k] = target;
  }
  if (old && holder(rank, *old) == chunk) set_holder(rank, *old, -1);
  location_[k] = target;
  set_holder(rank, target, chunk);
  return target;
}

std::optional<FinalCopy> BufferAllocator::move_home(int rank, int chunk) {
  if (inplace_ || collective_.combining) return std::nullopt;
  const Slot& post = first_post_[key_of(rank, chunk, collective_.num_chunks())];
  const std::optional<BufferRef> at = location(rank, chunk);
  if (post.rank < 0 || !at || at->buffer != Buffer::kInput) return std::nullopt;
  const BufferRef home = output_location(collective_, post, inplace_);
  const int held = holder(rank, home);
  if (held >= 0 && held != chunk) return std::nullopt;
  set_holder(rank, *at, -1);
  location_[key_of(rank, chunk, collective_.num_chunks())] = home;
  set_holder(rank, home, chunk);
  return FinalCopy{rank, chunk, *at, home};
}

std::vector<FinalCopy> BufferAllocator::final_copies() const {
  std::vector<FinalCopy> pending;
  const Collective& c = collective_;
  for (int k = 0; k < c.num_chunks(); ++k) {
    for (const Slot& s : c.chunks[k].post) {
      const std::optional<BufferRef> at = location(s.rank, k);
      if (!at) continue;  // the algorithm is wrong; the verifier reports it
      const BufferRef home = output_location(c, s, inplace_);
      if (*at != home) pending.push_back({s.rank, k, *at, home});
    }
  }
  // Order: a copy may not overwrite the source of a copy still pending (in-place aliasing).
  std::vector<FinalCopy> ordered;
  while (!pending.empty()) {
    std::unordered_map<int64_t, int> sources;  // (rank, slot) -> pending copies reading it
    for (const FinalCopy& f : pending) ++sources[slot_key(f.rank, f.src)];
    std::vector<FinalCopy> blocked;
    for (const FinalCopy& f : pending) {
      auto it = sources.find(slot_key(f.rank, f.dst));
      if (it != sources.end() && !(f.src == f.dst)) {
        blocked.push_back(f);
      } else {
        ordered.push_back(f);
      }
    }
    CCSYNTH_CHECK(blocked.size() < pending.size())
        << "cyclic final copies at rank " << pending.front().rank;
    pending = std::move(blocked);
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const FinalCopy& a, const FinalCopy& b) { return a.rank < b.rank; });
  return ordered;
}

}  // namespace ccsynth::compiler

#include "compiler/buffer_allocation.h"

#include <algorithm>

#include "ccsynth/core/error.h"

namespace ccsynth::compiler {

namespace {
// Dense code of a buffer slot for hashing: buffer in the low 2 bits.
int64_t ref_code(BufferRef ref) {
  return static_cast<int64_t>(ref.index) * 4 + static_cast<int64_t>(ref.buffer);
}
}  // namespace

int64_t BufferAllocator::key_of(int rank, int chunk, int num_chunks) {
  return static_cast<int64_t>(rank) * num_chunks + chunk;
}

int64_t BufferAllocator::slot_key(int rank, BufferRef ref) const {
  return ref_code(ref) * collective_.num_ranks + rank;
}

BufferAllocator::BufferAllocator(const Algorithm& algorithm, bool inplace)
    : collective_(algorithm.collective),
      inplace_(inplace),
      scratch_(algorithm.collective.num_ranks, 0) {
  const Collective& c = collective_;
  const int K = c.num_chunks();
  for (int k = 0; k < K; ++k) {
    // Like verify_algorithm, a later pre slot of the same rank replaces an earlier one.
    for (const Slot& s : c.chunks[k].pre) {
      const int64_t key = key_of(s.rank, k, K);
      auto old = location_.find(key);
      if (old != location_.end()) holder_.erase(slot_key(s.rank, old->second));
      const BufferRef ref = input_location(c, s, inplace_);
      location_[key] = ref;
      holder_[slot_key(s.rank, ref)] = k;
    }
    for (const Slot& s : c.chunks[k].post) {
      post_[key_of(s.rank, k, K)].push_back(s);
      post_location_[slot_key(s.rank, output_location(c, s, inplace_))] = true;
    }
  }
  // Liveness: the last access that reads each (rank, chunk) value.
  for (size_t i = 0; i < algorithm.ops.size(); ++i) {
    const ChunkOp& op = algorithm.ops[i];
    for (int k = op.chunk; k < op.chunk + op.count; ++k) {
      if (op.src < 0 || op.src >= c.num_ranks || op.dst < 0 || op.dst >= c.num_ranks) continue;
      const OrderKey send_key{op.step, 0, static_cast<int>(i), 0};
      auto& src_last = last_read_[key_of(op.src, k, K)];
      src_last = std::max(src_last, send_key);
      if (op.kind == OpKind::kReduce) {
        const OrderKey recv_key{op.step, 1, static_cast<int>(i), 0};
        auto& dst_last = last_read_[key_of(op.dst, k, K)];
        dst_last = std::max(dst_last, recv_key);
      }
    }
  }
}

std::optional<BufferRef> BufferAllocator::location(int rank, int chunk) const {
  auto it = location_.find(key_of(rank, chunk, collective_.num_chunks()));
  if (it == location_.end()) return std::nullopt;
  return it->second;
}

bool BufferAllocator::is_post_location(int rank, BufferRef ref) const {
  return post_location_.count(slot_key(rank, ref)) > 0;
}

bool BufferAllocator::live(int rank, int chunk, const OrderKey& key) const {
  const int64_t k = key_of(rank, chunk, collective_.num_chunks());
  if (post_.count(k)) return true;
  auto it = last_read_.find(k);
  return it != last_read_.end() && key < it->second;
}

BufferRef BufferAllocator::place_write(int rank, int chunk, const OrderKey& key, bool fresh) {
  const int64_t k = key_of(rank, chunk, collective_.num_chunks());
  const std::optional<BufferRef> old = location(rank, chunk);
  BufferRef target;
  auto post = post_.find(k);
  if (post != post_.end()) {
    target = output_location(collective_, post->second.front(), inplace_);
  } else if (auto s = scratch_of_.find(k); s != scratch_of_.end()) {
    target = s->second;
  } else {
    target = fresh_scratch(rank);
    scratch_of_[k] = target;
  }
  // In-place aliasing: never clobber another chunk's value that is still needed.
  auto held = holder_.find(slot_key(rank, target));
  if (fresh || (held != holder_.end() && held->second != chunk && live(rank, held->second, key))) {
    target = fresh_scratch(rank);
    if (post == post_.end()) scratch_of_[k] = target;
  }
  if (old && holder_.count(slot_key(rank, *old)) && holder_[slot_key(rank, *old)] == chunk) {
    holder_.erase(slot_key(rank, *old));
  }
  location_[k] = target;
  holder_[slot_key(rank, target)] = chunk;
  return target;
}

std::optional<FinalCopy> BufferAllocator::move_home(int rank, int chunk) {
  if (inplace_ || collective_.combining) return std::nullopt;
  auto post = post_.find(key_of(rank, chunk, collective_.num_chunks()));
  const std::optional<BufferRef> at = location(rank, chunk);
  if (post == post_.end() || !at || at->buffer != Buffer::kInput) return std::nullopt;
  const BufferRef home = output_location(collective_, post->second.front(), inplace_);
  auto held = holder_.find(slot_key(rank, home));
  if (held != holder_.end() && held->second != chunk) return std::nullopt;
  holder_.erase(slot_key(rank, *at));
  location_[key_of(rank, chunk, collective_.num_chunks())] = home;
  holder_[slot_key(rank, home)] = chunk;
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

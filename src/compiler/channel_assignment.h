#pragma once
// Channel assignment (MSCCLang sec. 5.2): every transfer gets the channel the algorithm asked
// for, or the lowest channel; a connection (src, dst, channel) that already carries its share
// spills to the next channel, so no threadblock has to run more steps than the runtime allows:
// the share is `capacity`, or, for a pair of ranks with n > capacity transfers, n spread
// evenly over the ceil(n / capacity) channels it needs. A channel is one FIFO connection between two ranks. Transfers hinted into one
// threadblock (ChunkOp::send_tb / recv_tb) share its channel; a hinted transfer that spills
// loses its hints (the step limit wins over the hint).

#include "compiler/lowered.h"

namespace ccsynth::compiler {

/// Gives the transfers without a channel hint that are hinted into a threadblock the channel of
/// the transfers hinted into the same threadblock that have one (a threadblock has one channel).
/// Throws UserError, naming the op, when one threadblock is asked for two channels.
void share_hinted_channels(Lowered& lowered);

/// Assigns Transfer::channel. Throws UserError when a transfer needs channel >= max_channels.
void assign_channels(Lowered& lowered, int capacity, int max_channels);

}  // namespace ccsynth::compiler

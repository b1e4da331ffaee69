#pragma once
// Channel assignment (MSCCLang sec. 5.2): every transfer gets the channel the algorithm asked
// for, or the lowest channel; a connection (src, dst, channel) that already carries `capacity`
// transfers spills to the next channel, so no threadblock has to run more steps than the
// runtime allows. A channel is one FIFO connection between two ranks.

#include "compiler/lowered.h"

namespace ccsynth::compiler {

/// Assigns Transfer::channel. Throws UserError when a transfer needs channel >= max_channels.
void assign_channels(Lowered& lowered, int capacity, int max_channels);

}  // namespace ccsynth::compiler

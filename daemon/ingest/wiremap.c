/* Configuration values as wire values: explicit maps (see wiremap.h). */
#include "wiremap.h"

#include "b2s_config.h"
#include "b2s_wire.h"

uint8_t b2sd_wire_ack_level(int32_t ack) {
  switch (ack) {
  case B2S_ACK_RECEIPT:
    return B2S_WIRE_LEVEL_RECEIVED;
  case B2S_ACK_WRITE:
    return B2S_WIRE_LEVEL_WRITTEN;
  case B2S_ACK_FSYNC:
  default:
    return B2S_WIRE_LEVEL_DURABLE;
  }
}

uint8_t b2sd_wire_policy(int32_t backpressure) {
  switch (backpressure) {
  case B2S_BP_DROP_NEWEST:
    return B2S_WIRE_POLICY_DROP_NEWEST;
  case B2S_BP_DROP_OLDEST:
    return B2S_WIRE_POLICY_DROP_OLDEST;
  case B2S_BP_BLOCK:
  default:
    return B2S_WIRE_POLICY_BLOCK;
  }
}

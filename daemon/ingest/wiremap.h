/* Configuration values as wire values (wiremap.c).  The configuration's
 * enums (b2s_config.h) and the protocol's (b2s_wire.h) are numbered
 * independently; every translation goes through these explicit maps. */
#ifndef B2SD_WIREMAP_H
#define B2SD_WIREMAP_H

#include <stdint.h>

/* A stream's durability.ack (enum b2s_ack) as the ACK level of OPENED
 * (B2S_WIRE_LEVEL_*).  An unknown value maps to the strictest level. */
uint8_t b2sd_wire_ack_level(int32_t ack);
/* A stream's backpressure (enum b2s_backpressure) as the policy of OPENED
 * (B2S_WIRE_POLICY_*).  An unknown value maps to block, which loses
 * nothing. */
uint8_t b2sd_wire_policy(int32_t backpressure);

#endif

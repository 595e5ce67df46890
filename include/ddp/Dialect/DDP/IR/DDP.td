//===- DDP.td - The ddp dialect, all of it -----------------*- tablegen -*-===//

#ifndef DDP_TD
#define DDP_TD

include "ddp/Dialect/DDP/IR/DDPAttributes.td"
include "ddp/Dialect/DDP/IR/DDPDialect.td"
include "ddp/Dialect/DDP/IR/DDPEnums.td"
include "ddp/Dialect/DDP/IR/DDPInterfaces.td"
include "ddp/Dialect/DDP/IR/DDPOps.td"
include "ddp/Dialect/DDP/IR/DDPTypes.td"

#endif // DDP_TD

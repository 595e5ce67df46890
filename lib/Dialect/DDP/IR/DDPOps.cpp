//===- DDPOps.cpp - Operations of the ddp dialect -------------------------===//
//
// The ops' custom syntax (the directives the generated parsers and printers
// call), accessors and folders, and the type helpers of DDPOps.h. The
// verifiers are in DDPOpVerifiers.cpp.
//
//===----------------------------------------------------------------------===//

#include "ddp/Dialect/DDP/IR/DDPOps.h"
#include "ddp/Dialect/DDP/IR/MeshLookup.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <charconv>
#include <cmath>

using namespace mlir;
using namespace ddp;

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

/// `(dp = 4, tp = 8)`
static ParseResult parseMeshAxes(OpAsmParser &parser, ArrayAttr &axisNames,
                                 DenseI64ArrayAttr &shape) {
  SmallVector<Attribute> names;
  SmallVector<int64_t> sizes;
  auto parseAxis = [&]() -> ParseResult {
    std::string name;
    int64_t size = 0;
    if (parser.parseKeywordOrString(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    names.push_back(parser.getBuilder().getStringAttr(name));
    sizes.push_back(size);
    return success();
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren, parseAxis))
    return failure();
  axisNames = parser.getBuilder().getArrayAttr(names);
  shape = parser.getBuilder().getDenseI64ArrayAttr(sizes);
  return success();
}

static void printMeshAxes(OpAsmPrinter &p, Operation *, ArrayAttr axisNames,
                          DenseI64ArrayAttr shape) {
  p << '(';
  llvm::interleaveComma(llvm::zip(axisNames, shape.asArrayRef()), p,
                        [&](auto axis) {
                          p.printKeywordOrString(
                              cast<StringAttr>(std::get<0>(axis)).getValue());
                          p << " = " << std::get<1>(axis);
                        });
  p << ')';
}

/// `@world[dp, tp]`
static ParseResult parseGroup(OpAsmParser &parser, FlatSymbolRefAttr &mesh,
                              ArrayAttr &axes) {
  SmallVector<Attribute> names;
  if (parser.parseAttribute(mesh))
    return failure();
  auto parseAxis = [&]() -> ParseResult {
    std::string name;
    if (parser.parseKeywordOrString(&name))
      return failure();
    names.push_back(parser.getBuilder().getStringAttr(name));
    return success();
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Square, parseAxis))
    return failure();
  axes = parser.getBuilder().getArrayAttr(names);
  return success();
}

static void printGroup(OpAsmPrinter &p, Operation *, FlatSymbolRefAttr mesh,
                       ArrayAttr axes) {
  p.printAttributeWithoutType(mesh);
  p << '[';
  llvm::interleaveComma(axes, p, [&](Attribute axis) {
    p.printKeywordOrString(cast<StringAttr>(axis).getValue());
  });
  p << ']';
}

/// An enum attribute as a bare keyword: `fwd`, `sum`.
template <typename EnumAttrT>
static ParseResult parseEnumKeyword(OpAsmParser &parser, EnumAttrT &attr) {
  using EnumT = decltype(std::declval<EnumAttrT>().getValue());
  FailureOr<EnumT> value = FieldParser<EnumT, EnumT>::parse(parser);
  if (failed(value))
    return failure();
  attr = EnumAttrT::get(parser.getContext(), *value);
  return success();
}

template <typename EnumAttrT>
static void printEnumKeyword(OpAsmPrinter &p, Operation *, EnumAttrT attr) {
  p << stringifyEnum(attr.getValue());
}

/// A double as the shortest decimal that reads back to the same value, so
/// that `lr 0.999` prints as written rather than as `0.99899999999999999`.
static ParseResult parseReal(OpAsmParser &parser, FloatAttr &attr) {
  double value;
  if (parser.parseFloat(value))
    return failure();
  attr = parser.getBuilder().getF64FloatAttr(value);
  return success();
}

static void printReal(OpAsmPrinter &p, Operation *, FloatAttr attr) {
  double value = attr.getValueAsDouble();
  if (!std::isfinite(value)) {
    p.printAttributeWithoutType(attr);
    return;
  }
  // The fewest significant digits that read back to `value` (what a
  // shortest round-trip to_chars writes), printed as printf's %g would:
  // 0.0001 rather than to_chars' shorter 1e-04. to_chars is several times
  // faster than a snprintf/strtod loop, which showed in printing large steps.
  char buffer[64];
  std::to_chars_result shortest = std::to_chars(
      buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  int precision = 0;
  for (const char *c = buffer; c != shortest.ptr && *c != 'e'; ++c)
    precision += *c >= '0' && *c <= '9';
  std::to_chars_result written;
  for (;; ++precision) {
    written = std::to_chars(buffer, buffer + sizeof(buffer), value,
                            std::chars_format::general, precision);
    double readBack = 0;
    std::from_chars(buffer, written.ptr, readBack);
    if (readBack == value || precision >= 17)
      break;
  }
  // MLIR's float literals need a decimal point: 1e-08 -> 1.0e-08.
  std::string text(buffer, written.ptr);
  if (text.find('.') == std::string::npos) {
    size_t exponent = text.find('e');
    text.insert(exponent == std::string::npos ? text.size() : exponent, ".0");
  }
  p << text;
}

/// An optional `async`; when present the op returns a `!ddp.token`.
/// `async` gives the op a token; `async after %t0, %t1` also issues it after
/// the ops of those tokens.
static ParseResult parseAsyncToken(
    OpAsmParser &parser, Type &tokenType,
    SmallVectorImpl<OpAsmParser::UnresolvedOperand> &dependencies) {
  if (failed(parser.parseOptionalKeyword("async")))
    return success();
  tokenType = parser.getBuilder().getType<TokenType>();
  if (failed(parser.parseOptionalKeyword("after")))
    return success();
  do {
    if (parser.parseOperand(dependencies.emplace_back()))
      return failure();
  } while (succeeded(parser.parseOptionalComma()));
  return success();
}

// The formats put an empty literal before the directive, so that no space
// is printed for it: a synchronous op, which prints nothing here, has one
// space before its attributes or colon, not two.
static void printAsyncToken(OpAsmPrinter &p, Operation *, Type tokenType,
                            OperandRange dependencies) {
  if (!tokenType)
    return;
  p << " async";
  if (!dependencies.empty())
    p << " after " << dependencies;
}

//===----------------------------------------------------------------------===//
// Element types and groups
//===----------------------------------------------------------------------===//

/// An element type alone (no ShapedType interface lookup: the tensor types'
/// checks run on every operand of every op the verifier visits).
static std::optional<ElementType> getScalarElementType(Type element) {
  if (element.isF16())
    return ElementType::F16;
  if (element.isBF16())
    return ElementType::BF16;
  if (element.isF32())
    return ElementType::F32;
  if (element.isF64())
    return ElementType::F64;
  return std::nullopt;
}

std::optional<ElementType> ddp::getElementTypeOf(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return getScalarElementType(tensor.getElementType());
  return getScalarElementType(getElementTypeOrSelf(type));
}

FloatType ddp::getFloatType(MLIRContext *context, ElementType type) {
  Builder builder(context);
  switch (type) {
  case ElementType::F16:
    return builder.getF16Type();
  case ElementType::BF16:
    return builder.getBF16Type();
  case ElementType::F32:
    return builder.getF32Type();
  case ElementType::F64:
    return builder.getF64Type();
  }
  llvm_unreachable("unknown element type");
}

std::optional<int64_t> ddp::getTensorSizeInBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return std::nullopt;
  std::optional<ElementType> element =
      getScalarElementType(tensor.getElementType());
  if (!element)
    return std::nullopt;
  std::optional<int64_t> bytes = getElementBytes(*element);
  for (int64_t dim : tensor.getShape())
    if (ShapedType::isDynamic(dim) || !(bytes = llvm::checkedMul(*bytes, dim)))
      return std::nullopt;
  return bytes;
}

/// An unregistered op with one region: MLIR cannot tell whether it is a
/// symbol table, and getSymbolUses gives up on it.
static bool isUnknownScope(Operation *op) {
  return op->getNumRegions() == 1 && !op->getDialect();
}

/// The references of one op's own attributes.
static void forEachOwnNamedSymbol(Operation *op,
                                  function_ref<void(StringAttr)> fn) {
  auto visit = [&](Attribute attr) {
    if (auto ref = dyn_cast<SymbolRefAttr>(attr)) {
      fn(ref.getRootReference());
      return;
    }
    // The attributes every op carries hold no reference: no walk (which
    // allocates its visited set) for them.
    if (isa<StringAttr, IntegerAttr, FloatAttr, UnitAttr, DenseArrayAttr>(attr))
      return;
    // A nested reference (@a::@b) is one use of @a, as MLIR counts it.
    attr.walk<WalkOrder::PreOrder>([&](SymbolRefAttr ref) {
      fn(ref.getRootReference());
      return WalkResult::skip();
    });
  };
  // With properties the raw dictionary holds the discardable attributes
  // only, and a registered op's inherent ones are read one by one (an
  // unregistered op's properties are no attributes, as getAttrDictionary
  // has it). ddp's ops without SymbolUserOpInterface have no inherent
  // reference.
  std::optional<RegisteredOperationName> registered = op->getRegisteredInfo();
  if (registered && op->getPropertiesStorage() &&
      !(isa<DDPDialect>(registered->getDialect()) &&
        !isa<SymbolUserOpInterface>(op)))
    for (StringAttr name : registered->getAttributeNames())
      if (std::optional<Attribute> attr = op->getInherentAttr(name.getValue());
          attr && *attr)
        visit(*attr);
  for (NamedAttribute named : op->getRawDictionaryAttrs())
    visit(named.getValue());
}

/// Whether the references inside `op` belong to another scope: a symbol
/// table's; or an unregistered op's with one region, which may be one.
static bool opensScope(Operation *op) {
  return op->hasTrait<OpTrait::SymbolTable>() || isUnknownScope(op);
}

bool ddp::forEachNamedSymbol(Operation *op, function_ref<void(StringAttr)> fn) {
  bool complete = !isUnknownScope(op);
  forEachOwnNamedSymbol(op, fn);
  if (opensScope(op))
    return complete;
  for (Region &region : op->getRegions())
    region.walk<WalkOrder::PreOrder>([&](Operation *nested) {
      forEachOwnNamedSymbol(nested, fn);
      complete &= !isUnknownScope(nested);
      return opensScope(nested) ? WalkResult::skip() : WalkResult::advance();
    });
  return complete;
}

Operation *ddp::createAsyncCollective(OpBuilder &builder,
                                      Operation *collective,
                                      ValueRange dependencies) {
  // Every DDP_CollectiveOp ends its operands with the dependencies and its
  // results with the optional token, and has no other variadic group (so no
  // segment sizes): the async form is the same op with both appended.
  assert(isa<CollectiveOpInterface>(collective) &&
         !cast<AsyncOpInterface>(collective).isAsync() &&
         cast<AsyncOpInterface>(collective).getAsyncDependencies().empty() &&
         "expected a synchronous collective");
  assert((dependencies.empty() || !isa<SendOp, RecvOp>(collective)) &&
         "a send or receive is never issued after other ops");
  OperationState state(collective->getLoc(), collective->getName());
  state.addOperands(collective->getOperands());
  state.addOperands(dependencies);
  state.addTypes(collective->getResultTypes());
  state.addTypes(builder.getType<TokenType>());
  state.propertiesAttr = collective->getPropertiesAsAttribute();
  return builder.create(state);
}

int64_t ddp::getGroupSize(MeshOp mesh, ArrayAttr axes) {
  int64_t size = 1;
  for (Attribute axis : axes) {
    int64_t axisSize = mesh.getAxisSize(cast<StringAttr>(axis).getValue());
    if (axisSize < 0)
      return -1;
    size *= axisSize;
  }
  return size;
}

MeshOp ddp::lookupMesh(Operation *step, FlatSymbolRefAttr name) {
  auto module = step->getParentOfType<ModuleOp>();
  if (!module)
    return nullptr;
  for (MeshOp mesh : module.getOps<MeshOp>())
    if (mesh.getSymNameAttr() == name.getAttr())
      return mesh;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Accessors and folders
//===----------------------------------------------------------------------===//

int64_t AllToAllVOp::getNumSubBlocks() {
  MeshOp mesh = lookupMesh(*this, getMeshAttr());
  int64_t groupSize = mesh ? getGroupSize(mesh, getAxes()) : -1;
  return getSendCounts().getType().getNumElements() /
         std::max<int64_t>(groupSize, 1);
}

int64_t AllToAllVOp::getRowNumel() {
  int64_t numel = 1;
  for (int64_t dim : getInput().getType().getShape().drop_front())
    numel *= dim;
  return numel;
}

int64_t MeshOp::getAxisSize(StringRef axis) {
  for (auto [name, size] : llvm::zip(getAxisNames(), getShape()))
    if (cast<StringAttr>(name).getValue() == axis)
      return size;
  return -1;
}

int64_t MeshOp::getNumRanks() {
  int64_t ranks = 1;
  for (int64_t size : getShape())
    ranks *= size;
  return ranks;
}

int64_t GemmOp::getM() {
  return getLhs().getType().getDimSize(getTransposeLhs() ? 1 : 0);
}
int64_t GemmOp::getK() {
  return getLhs().getType().getDimSize(getTransposeLhs() ? 0 : 1);
}
int64_t GemmOp::getN() {
  return getRhs().getType().getDimSize(getTransposeRhs() ? 0 : 1);
}

// Folding a stream op takes it off the stream; that is right for these two
// because they would copy their input unchanged (x * 1.0 is x bit for bit),
// and the lowering then reads the input's buffer instead of a copy.

OpFoldResult ScaleOp::fold(FoldAdaptor) {
  if (getFactor().convertToDouble() == 1.0)
    return getInput();
  return {};
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

/// A join of one token completes when that token does.
OpFoldResult JoinOp::fold(FoldAdaptor) {
  if (getTokens().size() == 1)
    return getTokens().front();
  return {};
}

#define GET_OP_CLASSES
#include "ddp/Dialect/DDP/IR/DDPOps.cpp.inc"

#include "ddp/Dialect/DDP/IR/DDPInterfaces.cpp.inc"

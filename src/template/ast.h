// The parsed template: a tree of nodes, immutable after parsing (so one parsed template can be rendered
// from many threads). Statements and expressions share one base because a template body is a list of
// both: text and `{{ expr }}` print, `{% ... %}` statements print what their bodies print.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/value.h"

namespace ember::jinja {

enum class NodeKind : uint8_t {
  // Statements
  kIf, kFor, kSet, kMacro, kCallBlock, kFilterBlock, kBreak, kContinue,
  // Expressions
  kLiteral, kIdentifier, kArrayLiteral, kTupleLiteral, kObjectLiteral, kMember, kSlice, kCall,
  kUnary, kBinary, kFilter, kTest, kSelect, kTernary,
};

struct Node {
  Node(NodeKind k, int l, int c) : kind(k), line(l), column(c) {}
  virtual ~Node() = default;
  NodeKind kind;
  int line, column;  // where the node starts in the original template
};
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

// --- Expressions ---

// Numbers, strings and template text (text is a string literal that prints itself).
struct Literal : Node {
  Literal(int l, int c, Value v) : Node(NodeKind::kLiteral, l, c), value(std::move(v)) {}
  Value value;
};

struct Identifier : Node {
  Identifier(int l, int c, std::string n) : Node(NodeKind::kIdentifier, l, c), name(std::move(n)) {}
  std::string name;
};

// [a, b] / (a, b) / {k: v}
struct ListLiteral : Node {
  ListLiteral(NodeKind k, int l, int c) : Node(k, l, c) {}
  std::vector<NodePtr> items;
};
struct ObjectLiteral : Node {
  ObjectLiteral(int l, int c) : Node(NodeKind::kObjectLiteral, l, c) {}
  std::vector<std::pair<NodePtr, NodePtr>> entries;
};

// obj.name, obj.0, obj[expr], obj[a:b:c] (property is then a Slice)
struct Member : Node {
  Member(int l, int c) : Node(NodeKind::kMember, l, c) {}
  NodePtr object;
  NodePtr property;  // Identifier or Literal for `.x`, any expression for `[x]`
  bool computed = false;
};
struct Slice : Node {
  Slice(int l, int c) : Node(NodeKind::kSlice, l, c) {}
  NodePtr start, stop, step;  // each may be null
};

// One argument of a call or one parameter of a macro.
struct Argument {
  enum class Kind : uint8_t { kPositional, kKeyword, kSpread, kKeywordSpread } kind = Kind::kPositional;
  std::string name;  // kKeyword: the keyword / parameter name; positional parameters: the name
  NodePtr value;     // argument expression, or a parameter's default (may be null)
};

struct Call : Node {
  Call(int l, int c) : Node(NodeKind::kCall, l, c) {}
  NodePtr callee;
  std::vector<Argument> args;
};

struct Unary : Node {
  Unary(int l, int c, std::string o) : Node(NodeKind::kUnary, l, c), op(std::move(o)) {}
  std::string op;  // "not", "-", "+"
  NodePtr operand;
};

struct Binary : Node {
  Binary(int l, int c, std::string o) : Node(NodeKind::kBinary, l, c), op(std::move(o)) {}
  std::string op;  // and or == != < > <= >= in "not in" + - ~ * / // % **
  NodePtr left, right;
};

// operand | name  or  operand | name(args)
struct Filter : Node {
  Filter(int l, int c) : Node(NodeKind::kFilter, l, c) {}
  NodePtr operand;  // null inside a FilterBlock
  std::string name;
  bool has_call = false;  // `name(...)`, even with no arguments: the reference dispatches on this
  std::vector<Argument> args;
};

// operand is [not] name
struct Test : Node {
  Test(int l, int c) : Node(NodeKind::kTest, l, c) {}
  NodePtr operand;
  std::string name;
  bool negate = false;
};

// `value if cond` without else: undefined when cond is false (also the `for ... if cond` filter).
struct Select : Node {
  Select(int l, int c) : Node(NodeKind::kSelect, l, c) {}
  NodePtr value, condition;
};

struct Ternary : Node {
  Ternary(int l, int c) : Node(NodeKind::kTernary, l, c) {}
  NodePtr condition, if_true, if_false;
};

// --- Statements ---

struct If : Node {
  If(int l, int c) : Node(NodeKind::kIf, l, c) {}
  struct Branch {
    NodePtr condition;
    Body body;
  };
  std::vector<Branch> branches;  // the `if`, then each `elif` (a flat list: a long elif chain is not deep)
  Body orelse;
};

struct For : Node {
  For(int l, int c) : Node(NodeKind::kFor, l, c) {}
  std::vector<std::string> targets;  // one name, or several for tuple unpacking
  bool unpack = false;
  NodePtr iterable;
  NodePtr condition;  // `for x in xs if cond` (null if none)
  Body body, orelse;
};

struct Set : Node {
  Set(int l, int c) : Node(NodeKind::kSet, l, c) {}
  NodePtr target;  // Identifier, TupleLiteral of identifiers, or Member (namespace attribute)
  NodePtr value;   // null for a block set: the rendered body is the value
  Body body;
};

struct Macro : Node {
  Macro(int l, int c) : Node(NodeKind::kMacro, l, c) {}
  std::string name;
  std::vector<Argument> params;  // kPositional (no default) or kKeyword (with default)
  Body body;
  bool uses_varargs = false, uses_kwargs = false;
};

struct CallBlock : Node {
  CallBlock(int l, int c) : Node(NodeKind::kCallBlock, l, c) {}
  std::unique_ptr<Call> call;
  std::vector<Argument> caller_params;
  Body body;
  bool uses_varargs = false, uses_kwargs = false;
};

struct FilterBlock : Node {
  FilterBlock(int l, int c) : Node(NodeKind::kFilterBlock, l, c) {}
  std::unique_ptr<Filter> filter;  // operand null: applied to the rendered body
  Body body;
};

}  // namespace ember::jinja

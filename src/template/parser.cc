#include "template/parser.h"

#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <set>
#include <string>

namespace ember::jinja {
namespace {

using TT = TokenType;

// Nesting deeper than kMaxNesting (brackets, `not not ...`, blocks in blocks) is rejected, and so is a
// tree deeper than kMaxTreeDepth (nesting plus operator and member chains, whose trees are as deep as
// they are long: `a + b + c` is two deep), so a hostile template cannot overflow the stack of the
// recursive-descent parser, of the evaluator that walks the tree, or of the tree's destructor.
constexpr int kMaxNesting = 200;
constexpr int kMaxTreeDepth = 1000;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : toks_(tokens) {}

  StatusOr<Body> ParseProgram() {
    Body body;
    while (pos_ < toks_.size()) {
      EMBER_ASSIGN_OR_RETURN(NodePtr n, ParseAny());
      if (n) body.push_back(std::move(n));
    }
    return body;
  }

 private:
  // --- token helpers ---
  bool Is(TT t, size_t ahead = 0) const { return pos_ + ahead < toks_.size() && toks_[pos_ + ahead].type == t; }
  bool IsIdent(const char* name, size_t ahead = 0) const {
    return Is(TT::kIdentifier, ahead) && toks_[pos_ + ahead].value == name;
  }
  // `{% name` where name is one of `names`.
  bool IsStatement(std::initializer_list<const char*> names) const {
    if (!Is(TT::kOpenStatement) || !Is(TT::kIdentifier, 1)) return false;
    for (const char* n : names) if (toks_[pos_ + 1].value == n) return true;
    return false;
  }
  const Token& Cur() const {
    static const Token kEnd{TT::kText, "", 0, 0};
    if (pos_ < toks_.size()) return toks_[pos_];
    return toks_.empty() ? kEnd : toks_.back();
  }
  Status Error(const std::string& msg) const {
    if (pos_ >= toks_.size()) return InvalidArgument("template syntax error at end of template: " + msg);
    return InvalidArgument("template syntax error at line " + std::to_string(Cur().line) + ", column " +
                           std::to_string(Cur().column) + ": " + msg);
  }
  Status Expect(TT t, const char* what) {
    if (!Is(t)) return Error(std::string("expected ") + what + (pos_ < toks_.size() ? ", got '" + Cur().value + "'" : ""));
    ++pos_;
    return Status::Ok();
  }
  Status ExpectEnd(const char* name) {
    EMBER_RETURN_IF_ERROR(Expect(TT::kOpenStatement, "'{%'"));
    if (!IsIdent(name)) return Error(std::string("expected '") + name + "'");
    ++pos_;
    return Expect(TT::kCloseStatement, "'%}'");
  }
  // Parses statements until one of `enders` (or errors at end of template).
  StatusOr<Body> ParseBodyUntil(std::initializer_list<const char*> enders, const char* block) {
    Body body;
    while (!IsStatement(enders)) {
      if (pos_ >= toks_.size()) return Error(std::string("unclosed '") + block + "' block");
      EMBER_ASSIGN_OR_RETURN(NodePtr n, ParseAny());
      if (n) body.push_back(std::move(n));
    }
    return body;
  }

  // --- statements ---
  StatusOr<NodePtr> ParseAny();
  StatusOr<NodePtr> ParseStatement();
  StatusOr<NodePtr> ParseSet(int line, int col);
  StatusOr<NodePtr> ParseIf(int line, int col);
  StatusOr<NodePtr> ParseFor(int line, int col);
  StatusOr<NodePtr> ParseMacro(int line, int col);
  StatusOr<NodePtr> ParseCallBlock(int line, int col);
  StatusOr<NodePtr> ParseFilterBlock(int line, int col);

  // --- expressions ---
  StatusOr<NodePtr> ParseExpression();
  StatusOr<NodePtr> ParseSequence(bool primary_only);
  StatusOr<NodePtr> ParseOr();
  StatusOr<NodePtr> ParseAnd();
  StatusOr<NodePtr> ParseNot();
  StatusOr<NodePtr> ParseComparison();
  StatusOr<NodePtr> ParseAdditive();
  StatusOr<NodePtr> ParseMultiplicative();
  StatusOr<NodePtr> ParsePower();
  StatusOr<NodePtr> ParseTest();
  StatusOr<NodePtr> ParseFilterExpr();
  StatusOr<std::unique_ptr<Filter>> ParseFilterTail(NodePtr operand);
  StatusOr<NodePtr> ParseUnarySign();
  StatusOr<NodePtr> ParseCallMember();
  StatusOr<NodePtr> ParseCallTail(NodePtr callee);
  StatusOr<NodePtr> ParseMemberTail(NodePtr object);
  StatusOr<NodePtr> ParseSubscript(int line, int col);
  StatusOr<std::vector<Argument>> ParseArgs(bool parameters);
  StatusOr<NodePtr> ParsePrimary();
  StatusOr<NodePtr> ParseNumber(const Token& t);

  // Left-associative chains (`a + b + c ...`, `x.y.z...`, `x | f | g ...`) build trees as deep as they
  // are long: each link counts toward the tree depth until the chain's parse returns.
  struct Chain {
    explicit Chain(Parser* p) : p(p) {}
    ~Chain() { p->tree_ -= links; }
    Status Next() {
      ++links;
      return ++p->tree_ > kMaxTreeDepth ? p->Error("expression too long") : Status::Ok();
    }
    Parser* p;
    int links = 0;
  };

  // RAII nesting counter for the recursive entry points.
  struct Nest {
    explicit Nest(Parser* p) : p(p) { ++p->depth_; ++p->tree_; }
    ~Nest() { --p->depth_; --p->tree_; }
    bool too_deep() const { return p->depth_ > kMaxNesting || p->tree_ > kMaxTreeDepth; }
    Parser* p;
  };

  const std::vector<Token>& toks_;
  size_t pos_ = 0;
  int depth_ = 0;  // open Nest levels
  int tree_ = 0;   // open Nest levels plus open chain links
  // Macro / call-block bodies being parsed: records loads of `varargs` / `kwargs`.
  std::vector<std::pair<bool, bool>> special_args_;
};

StatusOr<NodePtr> Parser::ParseAny() {
  Nest nest(this);
  if (nest.too_deep()) return Error("blocks nested too deeply");
  const Token& t = Cur();
  switch (t.type) {
    case TT::kComment:
      ++pos_;
      return NodePtr();
    case TT::kText:
      ++pos_;
      return NodePtr(std::make_unique<Literal>(t.line, t.column, Value::String(t.value)));
    case TT::kOpenStatement:
      return ParseStatement();
    case TT::kOpenExpression: {
      ++pos_;
      EMBER_ASSIGN_OR_RETURN(NodePtr e, ParseExpression());
      EMBER_RETURN_IF_ERROR(Expect(TT::kCloseExpression, "'}}'"));
      return e;
    }
    default:
      return Error("unexpected '" + t.value + "'");
  }
}

StatusOr<NodePtr> Parser::ParseStatement() {
  const int line = Cur().line, col = Cur().column;
  ++pos_;  // {%
  if (!Is(TT::kIdentifier)) return Error("expected a statement name");
  const std::string name = Cur().value;
  ++pos_;
  if (name == "set") return ParseSet(line, col);
  if (name == "if") {
    EMBER_ASSIGN_OR_RETURN(NodePtr n, ParseIf(line, col));
    EMBER_RETURN_IF_ERROR(ExpectEnd("endif"));
    return n;
  }
  if (name == "for") return ParseFor(line, col);
  if (name == "macro") return ParseMacro(line, col);
  if (name == "call") return ParseCallBlock(line, col);
  if (name == "filter") return ParseFilterBlock(line, col);
  if (name == "break" || name == "continue") {
    EMBER_RETURN_IF_ERROR(Expect(TT::kCloseStatement, "'%}'"));
    return NodePtr(std::make_unique<Node>(name == "break" ? NodeKind::kBreak : NodeKind::kContinue, line, col));
  }
  --pos_;
  return Error("unsupported statement '" + name + "'");
}

StatusOr<NodePtr> Parser::ParseSet(int line, int col) {
  auto set = std::make_unique<Set>(line, col);
  EMBER_ASSIGN_OR_RETURN(set->target, ParseSequence(false));
  if (Is(TT::kEquals)) {
    ++pos_;
    EMBER_ASSIGN_OR_RETURN(set->value, ParseSequence(false));
  } else {
    EMBER_RETURN_IF_ERROR(Expect(TT::kCloseStatement, "'=' or '%}'"));
    EMBER_ASSIGN_OR_RETURN(set->body, ParseBodyUntil({"endset"}, "set"));
    pos_ += 2;  // {% endset
  }
  EMBER_RETURN_IF_ERROR(Expect(TT::kCloseStatement, "'%}'"));
  return NodePtr(std::move(set));
}

// After `{% if`; stops before `{% endif`.
StatusOr<NodePtr> Parser::ParseIf(int line, int col) {
  auto node = std::make_unique<If>(line, col);
  while (true) {
    If::Branch branch;
    EMBER_ASSIGN_OR_RETURN(branch.condition, ParseExpression());
    EMBER_RETURN_IF_ERROR(Expect(TT::kCloseStatement, "'%}'"));
    EMBER_ASSIGN_OR_RETURN(branch.body, ParseBodyUntil({"elif", "else", "endif"}, "if"));
    node->branches.push_back(std::move(branch));
    if (!IsStatement({"elif"})) break;
    pos_ += 2;
  }
  if (IsStatement({"else"})) {
    pos_ += 2;
    EMBER_RETURN_IF_ERROR(Expect(TT::kCloseStatement, "'%}'"));
    EMBER_ASSIGN_OR_RETURN(node->orelse, ParseBodyUntil({"endif"}, "if"));
  }
  return NodePtr(std::move(node));
}

StatusOr<NodePtr> Parser::ParseFor(int line, int col) {
  auto node = std::make_unique<For>(line, col);
  EMBER_ASSIGN_OR_RETURN(NodePtr target, ParseSequence(true));
  if (target->kind == NodeKind::kIdentifier) {
    node->targets.push_back(static_cast<Identifier&>(*target).name);
  } else if (target->kind == NodeKind::kTupleLiteral) {
    node->unpack = true;
    for (const auto& item : static_cast<ListLiteral&>(*target).items) {
      if (item->kind != NodeKind::kIdentifier) return Error("loop targets must be names");
      node->targets.push_back(static_cast<Identifier&>(*item).name);
    }
  } else {
    return Error("expected a name or names for the loop variable");
  }
  if (!IsIdent("in")) return Error("expected 'in' after the loop variable");
  ++pos_;
  EMBER_ASSIGN_OR_RETURN(NodePtr iterable, ParseExpression());
  if (iterable->kind == NodeKind::kSelect) {  // `for x in xs if cond`
    auto& sel = static_cast<Select&>(*iterable);
    node->iterable = std::move(sel.value);
    node->condition = std::move(sel.condition);
  } else {
    node->iterable = std::move(iterable);
  }
  EMBER_RETURN_IF_ERROR(Expect(TT::kCloseStatement, "'%}'"));
  EMBER_ASSIGN_OR_RETURN(node->body, ParseBodyUntil({"endfor", "else"}, "for"));
  if (IsStatement({"else"})) {
    pos_ += 2;
    EMBER_RETURN_IF_ERROR(Expect(TT::kCloseStatement, "'%}'"));
    EMBER_ASSIGN_OR_RETURN(node->orelse, ParseBodyUntil({"endfor"}, "for"));
  }
  EMBER_RETURN_IF_ERROR(ExpectEnd("endfor"));
  return NodePtr(std::move(node));
}

StatusOr<NodePtr> Parser::ParseMacro(int line, int col) {
  auto node = std::make_unique<Macro>(line, col);
  if (!Is(TT::kIdentifier)) return Error("expected a macro name");
  node->name = Cur().value;
  ++pos_;
  EMBER_ASSIGN_OR_RETURN(node->params, ParseArgs(true));
  EMBER_RETURN_IF_ERROR(Expect(TT::kCloseStatement, "'%}'"));
  special_args_.emplace_back(false, false);
  auto body = ParseBodyUntil({"endmacro"}, "macro");
  std::tie(node->uses_varargs, node->uses_kwargs) = special_args_.back();
  special_args_.pop_back();
  if (!body.ok()) return body.status();
  node->body = std::move(*body);
  EMBER_RETURN_IF_ERROR(ExpectEnd("endmacro"));
  return NodePtr(std::move(node));
}

StatusOr<NodePtr> Parser::ParseCallBlock(int line, int col) {
  auto node = std::make_unique<CallBlock>(line, col);
  if (Is(TT::kOpenParen)) {
    EMBER_ASSIGN_OR_RETURN(node->caller_params, ParseArgs(true));
  }
  if (!Is(TT::kIdentifier)) return Error("expected a macro name after 'call'");
  node->call = std::make_unique<Call>(Cur().line, Cur().column);
  node->call->callee = std::make_unique<Identifier>(Cur().line, Cur().column, Cur().value);
  ++pos_;
  EMBER_ASSIGN_OR_RETURN(node->call->args, ParseArgs(false));
  EMBER_RETURN_IF_ERROR(Expect(TT::kCloseStatement, "'%}'"));
  special_args_.emplace_back(false, false);
  auto body = ParseBodyUntil({"endcall"}, "call");
  std::tie(node->uses_varargs, node->uses_kwargs) = special_args_.back();
  special_args_.pop_back();
  if (!body.ok()) return body.status();
  node->body = std::move(*body);
  EMBER_RETURN_IF_ERROR(ExpectEnd("endcall"));
  return NodePtr(std::move(node));
}

StatusOr<NodePtr> Parser::ParseFilterBlock(int line, int col) {
  auto node = std::make_unique<FilterBlock>(line, col);
  EMBER_ASSIGN_OR_RETURN(node->filter, ParseFilterTail(nullptr));
  EMBER_RETURN_IF_ERROR(Expect(TT::kCloseStatement, "'%}'"));
  EMBER_ASSIGN_OR_RETURN(node->body, ParseBodyUntil({"endfilter"}, "filter"));
  EMBER_RETURN_IF_ERROR(ExpectEnd("endfilter"));
  return NodePtr(std::move(node));
}

// --- expressions ---

StatusOr<NodePtr> Parser::ParseExpression() {
  Nest nest(this);
  if (nest.too_deep()) return Error("expression nested too deeply");
  EMBER_ASSIGN_OR_RETURN(NodePtr value, ParseOr());
  if (!IsIdent("if")) return value;
  const int line = Cur().line, col = Cur().column;
  ++pos_;
  EMBER_ASSIGN_OR_RETURN(NodePtr cond, ParseOr());
  if (IsIdent("else")) {
    ++pos_;
    auto t = std::make_unique<Ternary>(line, col);
    t->condition = std::move(cond);
    t->if_true = std::move(value);
    EMBER_ASSIGN_OR_RETURN(t->if_false, ParseExpression());
    return NodePtr(std::move(t));
  }
  auto s = std::make_unique<Select>(line, col);
  s->value = std::move(value);
  s->condition = std::move(cond);
  return NodePtr(std::move(s));
}

// `a, b` becomes a tuple; used by set targets/values, loop targets and parentheses.
StatusOr<NodePtr> Parser::ParseSequence(bool primary_only) {
  const int line = Cur().line, col = Cur().column;
  auto parse_one = [&]() { return primary_only ? ParsePrimary() : ParseExpression(); };
  EMBER_ASSIGN_OR_RETURN(NodePtr first, parse_one());
  if (!Is(TT::kComma)) return first;
  auto tuple = std::make_unique<ListLiteral>(NodeKind::kTupleLiteral, line, col);
  tuple->items.push_back(std::move(first));
  while (Is(TT::kComma)) {
    ++pos_;
    EMBER_ASSIGN_OR_RETURN(NodePtr next, parse_one());
    tuple->items.push_back(std::move(next));
  }
  return NodePtr(std::move(tuple));
}

StatusOr<NodePtr> Parser::ParseOr() {
  EMBER_ASSIGN_OR_RETURN(NodePtr left, ParseAnd());
  Chain chain(this);
  while (IsIdent("or")) {
    EMBER_RETURN_IF_ERROR(chain.Next());
    auto b = std::make_unique<Binary>(Cur().line, Cur().column, "or");
    ++pos_;
    b->left = std::move(left);
    EMBER_ASSIGN_OR_RETURN(b->right, ParseAnd());
    left = std::move(b);
  }
  return left;
}

StatusOr<NodePtr> Parser::ParseAnd() {
  EMBER_ASSIGN_OR_RETURN(NodePtr left, ParseNot());
  Chain chain(this);
  while (IsIdent("and")) {
    EMBER_RETURN_IF_ERROR(chain.Next());
    auto b = std::make_unique<Binary>(Cur().line, Cur().column, "and");
    ++pos_;
    b->left = std::move(left);
    EMBER_ASSIGN_OR_RETURN(b->right, ParseNot());
    left = std::move(b);
  }
  return left;
}

StatusOr<NodePtr> Parser::ParseNot() {
  if (!IsIdent("not")) return ParseComparison();
  Nest nest(this);
  if (nest.too_deep()) return Error("expression nested too deeply");
  auto u = std::make_unique<Unary>(Cur().line, Cur().column, "not");
  ++pos_;
  EMBER_ASSIGN_OR_RETURN(u->operand, ParseNot());
  return NodePtr(std::move(u));
}

StatusOr<NodePtr> Parser::ParseComparison() {
  EMBER_ASSIGN_OR_RETURN(NodePtr left, ParseAdditive());
  Chain chain(this);
  while (true) {
    EMBER_RETURN_IF_ERROR(chain.Next());
    std::string op;
    const int line = Cur().line, col = Cur().column;
    if (IsIdent("not") && IsIdent("in", 1)) {
      op = "not in";
      pos_ += 2;
    } else if (IsIdent("in") || Is(TT::kComparison)) {
      op = Cur().value;
      ++pos_;
    } else {
      return left;
    }
    auto b = std::make_unique<Binary>(line, col, op);
    b->left = std::move(left);
    EMBER_ASSIGN_OR_RETURN(b->right, ParseAdditive());
    left = std::move(b);
  }
}

StatusOr<NodePtr> Parser::ParseAdditive() {
  EMBER_ASSIGN_OR_RETURN(NodePtr left, ParseMultiplicative());
  Chain chain(this);
  while (Is(TT::kAdditive)) {
    EMBER_RETURN_IF_ERROR(chain.Next());
    auto b = std::make_unique<Binary>(Cur().line, Cur().column, Cur().value);
    ++pos_;
    b->left = std::move(left);
    EMBER_ASSIGN_OR_RETURN(b->right, ParseMultiplicative());
    left = std::move(b);
  }
  return left;
}

StatusOr<NodePtr> Parser::ParseMultiplicative() {
  EMBER_ASSIGN_OR_RETURN(NodePtr left, ParsePower());
  Chain chain(this);
  while (Is(TT::kMultiplicative)) {
    EMBER_RETURN_IF_ERROR(chain.Next());
    auto b = std::make_unique<Binary>(Cur().line, Cur().column, Cur().value);
    ++pos_;
    b->left = std::move(left);
    EMBER_ASSIGN_OR_RETURN(b->right, ParsePower());
    left = std::move(b);
  }
  return left;
}

StatusOr<NodePtr> Parser::ParsePower() {
  EMBER_ASSIGN_OR_RETURN(NodePtr left, ParseTest());
  Chain chain(this);
  while (Is(TT::kPower)) {  // left-associative, as in Jinja
    EMBER_RETURN_IF_ERROR(chain.Next());
    auto b = std::make_unique<Binary>(Cur().line, Cur().column, "**");
    ++pos_;
    b->left = std::move(left);
    EMBER_ASSIGN_OR_RETURN(b->right, ParseTest());
    left = std::move(b);
  }
  return left;
}

StatusOr<NodePtr> Parser::ParseTest() {
  EMBER_ASSIGN_OR_RETURN(NodePtr operand, ParseFilterExpr());
  Chain chain(this);
  while (IsIdent("is")) {
    EMBER_RETURN_IF_ERROR(chain.Next());
    auto t = std::make_unique<Test>(Cur().line, Cur().column);
    ++pos_;
    if (IsIdent("not")) {
      t->negate = true;
      ++pos_;
    }
    if (!Is(TT::kIdentifier)) return Error("expected a test name after 'is'");
    t->name = Cur().value;
    ++pos_;
    if (Is(TT::kOpenParen)) return Error("tests with arguments ('is " + t->name + "(...)') are not supported");
    t->operand = std::move(operand);
    operand = std::move(t);
  }
  return operand;
}

StatusOr<NodePtr> Parser::ParseFilterExpr() {
  EMBER_ASSIGN_OR_RETURN(NodePtr operand, ParseUnarySign());
  Chain chain(this);
  while (Is(TT::kPipe)) {
    EMBER_RETURN_IF_ERROR(chain.Next());
    ++pos_;
    EMBER_ASSIGN_OR_RETURN(operand, ParseFilterTail(std::move(operand)));
  }
  return operand;
}

// `name` or `name(args)` after a pipe (or after `{% filter`).
StatusOr<std::unique_ptr<Filter>> Parser::ParseFilterTail(NodePtr operand) {
  if (!Is(TT::kIdentifier)) return Error("expected a filter name");
  auto f = std::make_unique<Filter>(Cur().line, Cur().column);
  f->name = Cur().value;
  f->operand = std::move(operand);
  ++pos_;
  if (Is(TT::kOpenParen)) {
    f->has_call = true;
    EMBER_ASSIGN_OR_RETURN(f->args, ParseArgs(false));
  }
  return f;
}

StatusOr<NodePtr> Parser::ParseUnarySign() {
  if ((Is(TT::kUnary) || Is(TT::kAdditive)) && (Cur().value == "-" || Cur().value == "+")) {
    Nest nest(this);
    if (nest.too_deep()) return Error("expression nested too deeply");
    auto u = std::make_unique<Unary>(Cur().line, Cur().column, Cur().value);
    ++pos_;
    EMBER_ASSIGN_OR_RETURN(u->operand, ParseUnarySign());
    return NodePtr(std::move(u));
  }
  return ParseCallMember();
}

StatusOr<NodePtr> Parser::ParseCallMember() {
  EMBER_ASSIGN_OR_RETURN(NodePtr primary, ParsePrimary());
  EMBER_ASSIGN_OR_RETURN(NodePtr member, ParseMemberTail(std::move(primary)));
  if (Is(TT::kOpenParen)) return ParseCallTail(std::move(member));
  return member;
}

StatusOr<NodePtr> Parser::ParseCallTail(NodePtr callee) {
  Nest nest(this);
  if (nest.too_deep()) return Error("expression nested too deeply");
  auto call = std::make_unique<Call>(callee->line, callee->column);
  call->callee = std::move(callee);
  EMBER_ASSIGN_OR_RETURN(call->args, ParseArgs(false));
  EMBER_ASSIGN_OR_RETURN(NodePtr expr, ParseMemberTail(std::move(call)));
  if (Is(TT::kOpenParen)) return ParseCallTail(std::move(expr));
  return expr;
}

StatusOr<NodePtr> Parser::ParseMemberTail(NodePtr object) {
  Chain chain(this);
  while (Is(TT::kDot) || Is(TT::kOpenBracket)) {
    EMBER_RETURN_IF_ERROR(chain.Next());
    auto m = std::make_unique<Member>(Cur().line, Cur().column);
    m->computed = Is(TT::kOpenBracket);
    ++pos_;
    if (m->computed) {
      EMBER_ASSIGN_OR_RETURN(m->property, ParseSubscript(m->line, m->column));
      EMBER_RETURN_IF_ERROR(Expect(TT::kCloseBracket, "']'"));
    } else {
      EMBER_ASSIGN_OR_RETURN(m->property, ParsePrimary());
      const bool int_literal = m->property->kind == NodeKind::kLiteral &&
                               static_cast<Literal&>(*m->property).value.is_int();
      if (m->property->kind != NodeKind::kIdentifier && !int_literal) {
        return Error("expected a name or an integer after '.'");
      }
    }
    m->object = std::move(object);
    object = std::move(m);
  }
  return object;
}

// Inside `[...]`: an index expression, or a slice `a:b:c` with any part omitted.
StatusOr<NodePtr> Parser::ParseSubscript(int line, int col) {
  std::vector<NodePtr> parts;
  bool is_slice = false;
  while (!Is(TT::kCloseBracket)) {
    if (pos_ >= toks_.size()) return Error("unclosed '['");
    if (Is(TT::kColon)) {
      parts.emplace_back();
      ++pos_;
      is_slice = true;
    } else {
      EMBER_ASSIGN_OR_RETURN(NodePtr e, ParseExpression());
      parts.push_back(std::move(e));
      if (Is(TT::kColon)) {
        ++pos_;
        is_slice = true;
      }
    }
  }
  if (parts.empty()) return Error("expected an index or a slice inside '[]'");
  if (!is_slice) return std::move(parts[0]);
  if (parts.size() > 3) return Error("a slice takes at most 3 parts");
  auto s = std::make_unique<Slice>(line, col);
  s->start = std::move(parts[0]);
  if (parts.size() > 1) s->stop = std::move(parts[1]);
  if (parts.size() > 2) s->step = std::move(parts[2]);
  return NodePtr(std::move(s));
}

// `(a, k=v, *xs, **kw)` for calls; `(a, b=default)` for macro parameters.
StatusOr<std::vector<Argument>> Parser::ParseArgs(bool parameters) {
  EMBER_RETURN_IF_ERROR(Expect(TT::kOpenParen, "'('"));
  std::vector<Argument> args;
  std::set<std::string> names;
  bool saw_keyword = false, saw_spread = false;
  while (!Is(TT::kCloseParen)) {
    if (pos_ >= toks_.size()) return Error("unclosed '('");
    Argument arg;
    const bool kw_spread = Is(TT::kPower);
    const bool spread = Is(TT::kMultiplicative) && Cur().value == "*";
    if (parameters && (kw_spread || spread)) return Error("argument unpacking is not allowed in parameters");
    if (kw_spread || spread) {
      if (spread && saw_spread) return Error("only one '*' unpacking is allowed");
      ++pos_;
      arg.kind = kw_spread ? Argument::Kind::kKeywordSpread : Argument::Kind::kSpread;
      saw_spread = saw_spread || spread;
      EMBER_ASSIGN_OR_RETURN(arg.value, ParseExpression());
      args.push_back(std::move(arg));
      if (Is(TT::kComma)) ++pos_;
      if (kw_spread && !Is(TT::kCloseParen)) return Error("'**' must be the last argument");
      continue;
    }
    EMBER_ASSIGN_OR_RETURN(arg.value, ParseExpression());
    if (Is(TT::kEquals)) {
      ++pos_;
      if (arg.value->kind != NodeKind::kIdentifier) return Error("expected a name before '='");
      arg.kind = Argument::Kind::kKeyword;
      arg.name = static_cast<Identifier&>(*arg.value).name;
      EMBER_ASSIGN_OR_RETURN(arg.value, ParseExpression());
      saw_keyword = true;
    } else if (saw_keyword) {
      return Error(parameters ? "non-default parameter follows default parameter"
                              : "positional argument follows keyword argument");
    } else if (saw_spread) {
      return Error("positional argument follows '*' unpacking");
    }
    if (parameters) {
      if (arg.kind == Argument::Kind::kPositional) {
        if (arg.value->kind != NodeKind::kIdentifier) return Error("expected a parameter name");
        arg.name = static_cast<Identifier&>(*arg.value).name;
        arg.value.reset();
      }
      if (!names.insert(arg.name).second) return Error("duplicate parameter '" + arg.name + "'");
    }
    args.push_back(std::move(arg));
    if (Is(TT::kComma)) ++pos_;
  }
  ++pos_;  // )
  return args;
}

StatusOr<NodePtr> Parser::ParseNumber(const Token& t) {
  errno = 0;
  char* end = nullptr;
  if (t.value.find('.') != std::string::npos) {
    const double d = std::strtod(t.value.c_str(), &end);
    return NodePtr(std::make_unique<Literal>(t.line, t.column, Value::Float(d)));
  }
  const long long v = std::strtoll(t.value.c_str(), &end, 10);
  if (errno == ERANGE) return Error("integer literal out of range: " + t.value);
  return NodePtr(std::make_unique<Literal>(t.line, t.column, Value::Int(v)));
}

StatusOr<NodePtr> Parser::ParsePrimary() {
  if (pos_ >= toks_.size()) return Error("expected an expression");
  const Token& t = toks_[pos_++];
  switch (t.type) {
    case TT::kNumber:
      return ParseNumber(t);
    case TT::kString: {
      std::string s = t.value;
      while (Is(TT::kString)) s += toks_[pos_++].value;  // adjacent literals concatenate
      return NodePtr(std::make_unique<Literal>(t.line, t.column, Value::String(std::move(s))));
    }
    case TT::kIdentifier:
      if (!special_args_.empty() && t.value == "varargs") special_args_.back().first = true;
      if (!special_args_.empty() && t.value == "kwargs") special_args_.back().second = true;
      return NodePtr(std::make_unique<Identifier>(t.line, t.column, t.value));
    case TT::kOpenParen: {
      EMBER_ASSIGN_OR_RETURN(NodePtr e, ParseSequence(false));
      EMBER_RETURN_IF_ERROR(Expect(TT::kCloseParen, "')'"));
      return e;
    }
    case TT::kOpenBracket: {
      auto list = std::make_unique<ListLiteral>(NodeKind::kArrayLiteral, t.line, t.column);
      while (!Is(TT::kCloseBracket)) {
        if (pos_ >= toks_.size()) return Error("unclosed '['");
        EMBER_ASSIGN_OR_RETURN(NodePtr e, ParseExpression());
        list->items.push_back(std::move(e));
        if (Is(TT::kComma)) ++pos_;
      }
      ++pos_;
      return NodePtr(std::move(list));
    }
    case TT::kOpenBrace: {
      auto obj = std::make_unique<ObjectLiteral>(t.line, t.column);
      while (!Is(TT::kCloseBrace)) {
        if (pos_ >= toks_.size()) return Error("unclosed '{'");
        EMBER_ASSIGN_OR_RETURN(NodePtr k, ParseExpression());
        EMBER_RETURN_IF_ERROR(Expect(TT::kColon, "':' in dict literal"));
        EMBER_ASSIGN_OR_RETURN(NodePtr v, ParseExpression());
        obj->entries.emplace_back(std::move(k), std::move(v));
        if (Is(TT::kComma)) ++pos_;
      }
      ++pos_;
      return NodePtr(std::move(obj));
    }
    default:
      --pos_;
      return Error("unexpected '" + t.value + "'");
  }
}

}  // namespace

StatusOr<Body> Parse(const std::vector<Token>& tokens) {
  Parser p(tokens);
  return p.ParseProgram();
}

}  // namespace ember::jinja

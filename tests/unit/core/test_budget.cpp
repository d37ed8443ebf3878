#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/budget.hpp"

using namespace llmrepro::core;

namespace {

Prompt text_prompt(const std::string& text) {
  Prompt prompt;
  prompt.id = "p";
  prompt.text = text;
  return prompt;
}

PlannedRequest planned(int prompt_index, ProbeKind probe = ProbeKind::sweep) {
  PlannedRequest request;
  request.prompt_index = prompt_index;
  request.probe = probe;
  return request;
}

} // namespace

TEST_CASE("prompt_token_bound: UTF-8 bytes, 64 per message, 64 per request") {
  // 10 bytes of text, one message's margin and the request's.
  CHECK(prompt_token_bound(text_prompt("0123456789")) == 10 + 64 + 64);
  Prompt chat;
  chat.messages = {{"system", "Be brief."}, {"user", "h\xC3\xA9llo"}};
  // "system" 6 + "Be brief." 9, "user" 4 + "héllo" 6 bytes, two messages and the request.
  CHECK(prompt_token_bound(chat) == 6 + 9 + 4 + 6 + 2 * 64 + 64);
}

TEST_CASE("BudgetLedger::bound_of: the exact prompt tokens once known, per prompt and probe") {
  BudgetLedger ledger(BudgetLimits{.max_tokens_total = 1000});
  const Prompt sent = text_prompt("0123456789");
  CHECK(ledger.bound_of(planned(0), sent, 16).prompt == 138);
  CHECK(ledger.bound_of(planned(0), sent, 16).completion == 16);
  ledger.learn_prompt_tokens(planned(0), 7);
  CHECK(ledger.bound_of(planned(0), sent, 16).prompt == 7);
  CHECK(ledger.bound_of(planned(0), sent, 16).total() == 23);
  // Another probe kind sends another prompt, another prompt index another text.
  CHECK(ledger.bound_of(planned(0, ProbeKind::mixed), sent, 16).prompt == 138);
  CHECK(ledger.bound_of(planned(1), sent, 16).prompt == 138);
}

TEST_CASE("--max-requests: reservations of the requests in flight count") {
  BudgetLedger ledger(BudgetLimits{.max_requests = 3});
  const TokenBound bound{10, 5};
  const auto first = ledger.try_start(bound);
  const auto second = ledger.try_start(bound);
  const auto third = ledger.try_start(bound);
  REQUIRE(first);
  REQUIRE(second);
  REQUIRE(third);
  // Three in flight, none settled: a fourth would exceed the budget whatever they use.
  CHECK_FALSE(ledger.try_start(bound));
  CHECK(ledger.exhausted());
  CHECK(ledger.exhausted_by() == "--max-requests 3");
  ledger.settle(*first, TokenBound{0, 0});
  // Once refused, the ledger refuses everything: the audit ends.
  CHECK_FALSE(ledger.try_start(bound));
  ledger.settle(*second, TokenBound{10, 5});
  ledger.settle(*third, std::nullopt);
  CHECK(ledger.spent().requests == 3);
  CHECK(ledger.spent().tokens == 0 + 15 + 15);
}

TEST_CASE("--max-tokens-total: spent + reserved + this bound within the budget") {
  BudgetLedger ledger(BudgetLimits{.max_tokens_total = 100});
  const auto a = ledger.try_start({30, 20}); // reserved 50
  REQUIRE(a);
  const auto b = ledger.try_start({30, 20}); // reserved 100: exactly the budget
  REQUIRE(b);
  ledger.settle(*a, TokenBound{12, 3}); // spent 15, reserved 50
  // 15 + 50 + 40 > 100.
  CHECK_FALSE(ledger.try_start({20, 20}));
  CHECK(ledger.exhausted_by() == "--max-tokens-total 100");
  ledger.settle(*b, TokenBound{12, 20});
  CHECK(ledger.spent().tokens == 15 + 32);
  CHECK(ledger.spent().requests == 2);

  BudgetLedger settled(BudgetLimits{.max_tokens_total = 100});
  const auto c = settled.try_start({30, 20});
  settled.settle(*c, TokenBound{12, 3}); // spent 15
  // 15 + 85 = 100 fits; one token more would not.
  CHECK(settled.try_start({45, 40}));
  CHECK_FALSE(settled.try_start({0, 1}));
}

TEST_CASE("--max-cost: the bound priced at --price") {
  // 1,000,000 per million: one unit per token.
  BudgetLedger ledger(
      BudgetLimits{.max_cost = 0.0001, .price = Price{1.0, 3.0}}); // 100 input-token units
  // 40 in + 20 out = 40 + 60 = 100 micro-units: exactly the budget.
  const auto a = ledger.try_start({40, 20});
  REQUIRE(a);
  CHECK_FALSE(ledger.try_start({1, 0}));
  CHECK(ledger.exhausted_by() == "--max-cost 0.0001");
  ledger.settle(*a, TokenBound{40, 10});
  CHECK(ledger.spent().cost == doctest::Approx(0.00007).epsilon(1e-9));
}

TEST_CASE("a request that reports more than its bound stops the ledger") {
  BudgetLedger ledger(BudgetLimits{.max_requests = 100});
  const auto a = ledger.try_start({10, 5});
  const auto b = ledger.try_start({10, 5});
  ledger.settle(*a, TokenBound{11, 5});
  CHECK(ledger.overrun());
  CHECK(ledger.overrun_message() == "a request reported 11 prompt tokens, above its bound of 10");
  CHECK_FALSE(ledger.try_start({1, 1}));
  // What was in flight still settles, and is spent.
  ledger.settle(*b, TokenBound{10, 5});
  CHECK(ledger.spent().requests == 2);
  CHECK(ledger.spent().tokens == 31);

  BudgetLedger completion(BudgetLimits{.max_requests = 100});
  completion.settle(*completion.try_start({10, 5}), TokenBound{3, 6});
  CHECK(completion.overrun_message() ==
        "a request reported 6 completion tokens, above its max_tokens of 5");
}

TEST_CASE("release: a reservation never sent spends nothing") {
  BudgetLedger ledger(BudgetLimits{.max_requests = 1});
  const auto a = ledger.try_start({1, 1});
  ledger.release(*a);
  CHECK(ledger.spent().requests == 0);
  CHECK(ledger.try_start({1, 1}));
}

TEST_CASE("a resumed audit's spending counts") {
  BudgetLedger ledger(BudgetLimits{.max_requests = 5, .max_tokens_total = 1000});
  ledger.add_spent(4, 400, 100);
  CHECK(ledger.spent().requests == 4);
  CHECK(ledger.spent().tokens == 500);
  CHECK(ledger.try_start({10, 10}));
  CHECK_FALSE(ledger.try_start({10, 10}));
  CHECK(ledger.exhausted_by() == "--max-requests 5");
}

TEST_CASE("wave_bound: every request's prompt bound and max_tokens, primes included") {
  Suite suite;
  suite.prompts.push_back(text_prompt("0123456789")); // bound 138
  Prompt own = text_prompt("abc");                    // bound 131, its own max_tokens 4
  own.max_tokens = 4;
  suite.prompts.push_back(own);
  Wave wave;
  wave.requests = {planned(0), planned(1), planned(0)};
  const WaveBound bound = wave_bound(wave, suite, 16, std::nullopt);
  CHECK(bound.requests == 3);
  CHECK(bound.primes == 0);
  CHECK(bound.tokens.prompt == 138 + 131 + 138);
  CHECK(bound.tokens.completion == 16 + 4 + 16);
  // --stop-after 8 caps the default, not the smaller own max_tokens.
  CHECK(wave_bound(wave, suite, 16, 8).tokens.completion == 8 + 4 + 8);
}

TEST_CASE("budget_stop_message names the budget, the figures and at most ten prompts") {
  CHECK(budget_stop_message("--max-requests 40", 40, 64, {"p1", "p2", "p3"}) ==
        "budget --max-requests 40 reached: 40 of 64 planned requests sent; 3 prompts undecided: "
        "p1, p2, p3");
  CHECK(budget_stop_message("--max-cost 2", 5, 9, {}) ==
        "budget --max-cost 2 reached: 5 of 9 planned requests sent; 0 prompts undecided");
  std::vector<std::string> many;
  for (int i = 1; i <= 12; ++i) many.push_back("q" + std::to_string(i));
  CHECK(budget_stop_message("--max-tokens-total 9", 1, 2, many) ==
        "budget --max-tokens-total 9 reached: 1 of 2 planned requests sent; 12 prompts "
        "undecided: q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, +2 more");
}

TEST_CASE("stop_after_line") {
  AuditConfig config;
  CHECK(stop_after_line(config).empty());
  config.plan.stop_after = 12;
  CHECK(stop_after_line(config) ==
        "completions capped at 12 tokens (--stop-after): divergence beyond token 12 is not seen");
}

TEST_CASE(
    "BudgetLedger: the charge is journalled once per batch of starts and survives as a floor") {
  BudgetLedger ledger(BudgetLimits{.max_requests = 3});
  std::vector<BudgetCharge> journal;
  ledger.set_journal([&](const BudgetCharge& charge) -> Result<void> {
    journal.push_back(charge);
    return {};
  });
  auto first = ledger.try_start({100, 10});
  REQUIRE(first);
  CHECK(journal.empty()); // due, written by the sender before the request goes out
  REQUIRE(ledger.write_journal());
  REQUIRE(journal.size() == 1);
  CHECK(journal.back() == BudgetCharge{1, 100, 10});
  REQUIRE(ledger.write_journal());
  CHECK(journal.size() == 1); // nothing reserved since: no write
  ledger.settle(*first, TokenBound{40, 5});
  CHECK(ledger.charged() == BudgetCharge{1, 40, 5});
  REQUIRE(ledger.try_start({100, 10}));
  REQUIRE(ledger.try_start({100, 10}));
  REQUIRE(ledger.write_journal());
  CHECK(journal.size() == 2); // one write for the two starts
  CHECK(journal.back() == BudgetCharge{3, 240, 25});
  ledger.release(1);
  CHECK(ledger.charged() == BudgetCharge{2, 140, 15});

  // A run killed with that request in flight: --resume spends at least the stored charge.
  BudgetLedger resumed(BudgetLimits{.max_requests = 3});
  resumed.add_spent(1, 40, 5); // the one record
  resumed.charge_at_least(journal.back());
  CHECK(resumed.spent().requests == 3);
  CHECK(resumed.charged() == BudgetCharge{3, 240, 25});
  CHECK_FALSE(resumed.try_start({1, 1}));
  CHECK(resumed.exhausted_by() == "--max-requests 3");
}

TEST_CASE("BudgetLedger: a charge that cannot be stored stops the run") {
  BudgetLedger ledger(BudgetLimits{.max_requests = 10});
  ledger.set_journal([](const BudgetCharge&) -> Result<void> {
    return make_error(ErrorCode::environment, "disk full");
  });
  REQUIRE(ledger.try_start({1, 1}));
  auto written = ledger.write_journal();
  REQUIRE_FALSE(written);
  CHECK(written.error().message == "disk full");
  CHECK(ledger.overrun());
  CHECK(ledger.overrun_message() == "the budget's count could not be stored (disk full)");
  CHECK_FALSE(ledger.try_start({1, 1}));
}

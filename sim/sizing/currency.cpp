#include "sim/sizing/currency.hpp"

#include <set>

#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"

namespace cs::sizing {

namespace {
std::string list(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}
}  // namespace

std::string one_currency(std::vector<scenario::Offer*> offers, const ExchangeRates& fx, const std::string& file,
                         const std::string& flag) {
  std::set<std::string> used;
  for (const auto* o : offers) used.insert(o->currency);
  if (used.empty()) return "";
  if (used.size() == 1) {
    // Said, not silently ignored: --fx converts between the offers' own currencies only.
    return fx.empty() ? "" : "costs in " + *used.begin() + ": every offer prices in it, so --fx converts nothing";
  }
  std::set<std::string> unnamed;
  for (const auto& c : used)
    if (!fx.count(c)) unnamed.insert(c);
  if (unnamed.size() != 1) {
    const std::string why = unnamed.empty() ? "names a rate for every currency of the offers (" + list(used) +
                                                  "); leave out the one to rank in"
                                            : "leaves " + list(unnamed) + " without a rate";
    throw InputError(file, flag,
                     "the offers price in " + list(used) +
                         ": costs in different currencies are never ranked together without exchange rates; " +
                         (fx.empty() ? std::string("give them with --fx, e.g. --fx CNY=0.14 to rank in USD, or pick "
                                                   "offers of one currency")
                                     : "--fx " + why + " (it converts every currency but one into that one)"));
  }
  const std::string into = *unnamed.begin();
  std::string note;
  std::set<std::string> told;
  for (auto* o : offers) {
    if (o->currency == into) continue;
    const double r = fx.at(o->currency);
    if (told.insert(o->currency).second)
      note += (note.empty() ? "" : ", ") + o->currency + " at " + shortest(r) + " " + into + " each";
    o->price *= r;
    o->price_max *= r;
    o->hourly_price *= r;
    o->hourly_price_max *= r;
    o->currency = into;
  }
  return "costs in " + into + "; converted at the rates given (--fx): " + note;
}

}  // namespace cs::sizing

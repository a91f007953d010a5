#pragma once
#include <map>
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace cs::sizing {

/// Exchange rates a user gives (`--fx CNY=0.14`): units of the one currency left unnamed per unit of
/// each named one. No rate is shipped: prices move, and ranking a CNY offer against a USD one at a
/// rate nobody chose would be a wrong answer.
using ExchangeRates = std::map<std::string, double>;

/// Brings `offers` into one currency so that their costs can be ranked together. Offers that already
/// share one currency are left as they are (with rates given, the note says they converted nothing). With
/// several, every currency but one must have a rate in `fx`: those offers' prices (both terms, both
/// ends of a range) are converted into the one left. Returns what was converted, for the output
/// ("" when nothing was); throws InputError naming `flag` (the --fx flag) when the offers' currencies
/// cannot be brought together.
std::string one_currency(std::vector<scenario::Offer*> offers, const ExchangeRates& fx, const std::string& file,
                         const std::string& flag);

}  // namespace cs::sizing

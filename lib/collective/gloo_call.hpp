// One collective on one Gloo rank (collective.hpp), and the binding of
// untyped buffers to Gloo's typed options: Gloo only needs the element size,
// so an unsigned type of that size carries any data type's bytes.
#pragma once

#include <gloo/allreduce.h>
#include <gloo/context.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "collective/collective.hpp"
#include "collective/gloo_reduce.hpp"

namespace xtk::collective {

struct GlooCall {
  const void* send = nullptr;  // the input; inside `recv` when in place
  void* recv = nullptr;        // the output
  bool in_place = false;
  Counts counts;
  std::size_t element = 4;
  const ReduceFn* reduce = nullptr;  // for the reductions
  int root = 0, rank = 0, nranks = 1;
  std::shared_ptr<gloo::Context> context;
  std::uint32_t tag = 0;
  std::chrono::milliseconds timeout{0};
  gloo::AllreduceOptions::Algorithm all_reduce_algorithm = gloo::AllreduceOptions::Algorithm::RING;
};

// Calls f(T{}) with T the unsigned integer type of `element` bytes.
template <typename F>
void with_element_type(std::size_t element, F&& f) {
  switch (element) {
    case 1:
      return f(std::uint8_t{});
    case 2:
      return f(std::uint16_t{});
    case 4:
      return f(std::uint32_t{});
    default:
      return f(std::uint64_t{});
  }
}

// Gloo's options take non-const pointers; it does not write its inputs.
template <typename T>
T* input_pointer(const void* p) {
  return const_cast<T*>(static_cast<const T*>(p));
}

// Runs a Gloo collective; Gloo's errors (a peer's connection lost, its
// timeout) become CollectiveError naming the collective and its size.
void run_gloo(const Collective& collective, const GlooCall& call, const std::function<void()>& body);

// run_gloo of body(options, T{}): Gloo options of type Options with the
// call's context, tag and timeout, and T the element type to bind buffers with.
template <typename Options, typename Body>
void run_gloo_options(const Collective& collective, const GlooCall& call, Body&& body) {
  run_gloo(collective, call, [&] {
    with_element_type(call.element, [&](auto t) {
      Options options(call.context);
      options.setTag(call.tag);
      options.setTimeout(call.timeout);
      body(options, t);
    });
  });
}

}  // namespace xtk::collective

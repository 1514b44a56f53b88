// ZeRO stage 3: construction, the parameter gathers (the coordinator's
// backend), publishing and memory (see stage3_strategy.h); the gradient
// path is in stage3_reduce.cc.
#include "zero/stage3_strategy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "zero/pass_trace.h"
#include "zero/sharded_strategy.h"

namespace zerotrain::zero {
namespace {

Status validate(const Stage3Options& o) {
  if (o.model == nullptr || o.comm == nullptr)
    return invalid_argument("Stage3Strategy: model and comm are required");
  if (o.model->parameters() == nullptr || o.model->gradients() == nullptr)
    return invalid_argument(
        "Stage3Strategy: the model needs flat parameter and gradient buffers holding its "
        "initial weights (GptModelOptions own_parameters/own_gradients)");
  if (o.state_count < 0) return invalid_argument("Stage3Strategy: state_count < 0");
  for (const auto& [key, v] : {std::pair{"reduce_bucket_size", o.reduce_bucket_size},
                               std::pair{"sub_group_size", o.sub_group_size},
                               std::pair{"stage3_max_live_parameters", o.max_live_parameters}})
    if (v < 1)
      return invalid_argument(std::string("zero_optimization.") + key + ": must be >= 1, got " +
                              std::to_string(v));
  for (const auto& [key, v] :
       {std::pair{"stage3_prefetch_bucket_size", o.prefetch_bucket_size},
        std::pair{"stage3_param_persistence_threshold", o.param_persistence_threshold},
        std::pair{"stage3_max_reuse_distance", o.max_reuse_distance}})
    if (v < 0)
      return invalid_argument(std::string("zero_optimization.") + key + ": must be >= 0, got " +
                              std::to_string(v));
  if (!(o.predivide_factor > 0) || !std::isfinite(o.predivide_factor))
    return invalid_argument("gradient_predivide_factor: must be a positive number, got " +
                            std::to_string(o.predivide_factor));
  return Status();
}

}  // namespace

StatusOr<std::unique_ptr<Stage3Strategy>> Stage3Strategy::create(const Stage3Options& o) {
  ZT_RETURN_IF_ERROR(validate(o));
  std::unique_ptr<Stage3Strategy> s(new Stage3Strategy(o));
  model::GptModel& m = *o.model;
  const int n = o.comm->world_size();
  std::span<float> flat(m.parameters(), static_cast<size_t>(m.layout().total_numel()));
  if (n > 1) ZT_RETURN_IF_ERROR(o.comm->broadcast(flat, 0));
  s->param_dtype_ = o.dtype;
  s->layout_ = Stage3Layout(m.layout(), n, o.comm->rank(), o.param_persistence_threshold,
                            o.model_persistence_threshold);
  std::vector<int64_t> group_numel;
  for (const GroupPlan& g : s->layout_.groups()) group_numel.push_back(g.numel);
  CoordinatorOptions co{.prefetch_bucket_size = o.prefetch_bucket_size,
                        .max_live_parameters = o.max_live_parameters,
                        .max_reuse_distance = o.max_reuse_distance};
  ZT_ASSIGN_OR_RETURN(s->coordinator_,
                      ParamCoordinator::create(pass_trace(m), std::move(group_numel), co, s.get()));
  ZT_RETURN_IF_ERROR(s->allocate(flat));
  // From here on the model holds no parameter or gradient of its own.
  m.release_owned_buffers();
  s->buffers_.resize(static_cast<size_t>(m.num_groups()));
  s->install_hooks();
  return s;
}

Stage3Strategy::~Stage3Strategy() {
  // Nothing may still write into buffers about to be freed.
  for (PendingReduce& p : reduces_)
    if (p.work) (void)p.work->wait();
  for (GroupBuffers& b : buffers_)
    if (b.gather) (void)b.gather->wait();
  if (hooks_installed_) options_.model->set_hooks({});
}

// The owned arrays, filled from the broadcast full weights `flat`.
Status Stage3Strategy::allocate(std::span<const float> flat) {
  const auto own = static_cast<size_t>(layout_.owned_numel());
  const bool opt_host = options_.offload_optimizer;
  const bool separate = param_dtype_ != DType::kFloat32;
  const bool master_host = opt_host || (!separate && options_.offload_param);
  // fp32 offloaded by offload_param alone: that block's pin_memory.
  const bool master_pin = opt_host ? options_.pin_memory : options_.pin_param_memory;
  ZT_ASSIGN_OR_RETURN(master_store_, PartitionArray::allocate(DType::kFloat32, own,
                                                              master_host, master_pin));
  std::span<float> master = master_store_.f32();
  for (const GroupPlan& g : layout_.groups())
    for (const CompactList* l : {&g.gathered, &g.persistent})
      for (const Piece& p : l->mine)
        std::memcpy(master.data() + p.owned, flat.data() + p.flat,
                    static_cast<size_t>(p.count) * sizeof(float));
  if (separate) {
    ZT_ASSIGN_OR_RETURN(param_store_, PartitionArray::allocate(param_dtype_, own,
                                                               options_.offload_param,
                                                               options_.pin_param_memory));
    params_ = &param_store_;
    params_->write(0, master);  // rounded to the model dtype
  }
  ZT_ASSIGN_OR_RETURN(grads_,
                      PartitionArray::allocate(param_dtype_, own, opt_host, options_.pin_memory));
  if (param_dtype_ == DType::kFloat32) owned_grads_ = grads_.f32();
  for (int i = 0; i < options_.state_count; ++i) {
    ZT_ASSIGN_OR_RETURN(PartitionArray st, PartitionArray::allocate(DType::kFloat32, own,
                                                                    opt_host, options_.pin_memory));
    states_.push_back(std::move(st));
  }
  for (PartitionArray& st : states_) state_spans_.push_back(st.f32());
  // Whole copies of the persistent tensors, rounded as the model sees them.
  ZT_ASSIGN_OR_RETURN(persistent_, device::cpu::AlignedBuffer<float>::allocate(
                                       static_cast<size_t>(layout_.persistent_numel())));
  for (const GroupPlan& g : layout_.groups())
    for_each_extent(g.persistent, [&](int64_t f, int64_t c, int64_t cnt) {
      const auto len = static_cast<size_t>(cnt);
      std::span<float> dst = persistent_.span().subspan(
          static_cast<size_t>(g.persistent_offset + c), len);
      round_to(options_.dtype, flat.subspan(static_cast<size_t>(f), len), dst);
    });
  return Status();
}

void Stage3Strategy::install_hooks() {
  model::GroupHooks h;
  h.before_forward = [this](int s) { return coordinator_.before_step(s); };
  h.after_forward = [this](int s) { return coordinator_.after_step(s); };
  h.before_backward = [this](int s) { return on_before_backward(s); };
  h.after_backward = [this](int s) { return on_after_backward(s); };
  options_.model->set_hooks(std::move(h));
  hooks_installed_ = true;
}

// Own chunk of group g's gathered list (storage dtype) into chunk `rank`
// of a staging buffer of all N chunks, then the all-gather in place.
Status Stage3Strategy::issue_gather(int g, BufferPool::Buffer* staging, comm::WorkPtr* work) {
  const CompactList& l = layout_.group(g).gathered;
  // One rank owns it all: unpack_gather reads the partition itself.
  if (l.count == 0 || world() == 1) return Status();
  const size_t es = dtype_size(param_dtype_);
  const auto chunk = static_cast<size_t>(l.chunk);
  ZT_ASSIGN_OR_RETURN(*staging, pool_.acquire(static_cast<size_t>(l.padded()) * es));
  std::byte* mine = staging->data() + static_cast<size_t>(rank()) * chunk * es;
  size_t filled = 0;
  for (const Piece& p : l.mine) {
    std::memcpy(mine + static_cast<size_t>(p.compact) * es, params_->at(static_cast<size_t>(p.owned)),
                static_cast<size_t>(p.count) * es);
    filled = static_cast<size_t>(p.compact + p.count);
  }
  std::memset(mine + filled * es, 0, (chunk - filled) * es);  // padding
  *work = options_.comm->allgather_async(std::span<const std::byte>(mine, chunk * es),
                                         std::span<std::byte>(staging->data(), staging->size()));
  if (options_.overlap_comm) return Status();
  // Inline: complete now, in order.
  Status s = (*work)->wait();
  work->reset();
  return s;
}

void Stage3Strategy::unpack_gather(int g, const std::byte* staging, float* dst) {
  const GroupPlan& plan = layout_.group(g);
  const size_t es = dtype_size(param_dtype_);
  if (staging != nullptr) {
    for_each_extent(plan.gathered, [&](int64_t f, int64_t c, int64_t cnt) {
      to_fp32(param_dtype_, staging + static_cast<size_t>(c) * es, static_cast<size_t>(cnt),
              dst + (f - plan.offset));
    });
  } else if (world() == 1) {  // no staging copy: this rank's pieces are the whole list
    for (const Piece& p : plan.gathered.mine)
      to_fp32(param_dtype_, params_->at(static_cast<size_t>(p.owned)), static_cast<size_t>(p.count),
              dst + (p.flat - plan.offset));
  }
  unpack_list(plan.persistent, plan.offset, persistent_.data() + plan.persistent_offset, dst);
}

Status Stage3Strategy::start_gather(int g) {
  GroupBuffers& b = buffers_[static_cast<size_t>(g)];
  const auto numel = static_cast<size_t>(layout_.group(g).numel);
  ZT_ASSIGN_OR_RETURN(b.params, pool_.acquire(numel * sizeof(float)));
  return issue_gather(g, &b.staging, &b.gather);
}

Status Stage3Strategy::finish_gather(int g) {
  GroupBuffers& b = buffers_[static_cast<size_t>(g)];
  Status s;
  if (b.gather) {
    s = b.gather->wait();
    b.gather.reset();
  }
  if (s.ok()) {
    unpack_gather(g, b.staging.empty() ? nullptr : b.staging.data(), group_params(g));
    options_.model->set_group_parameters(g, group_params(g));
  }
  pool_.release(std::move(b.staging));
  return s;
}

void Stage3Strategy::release(int g) {
  options_.model->set_group_parameters(g, nullptr);
  pool_.release(std::move(buffers_[static_cast<size_t>(g)].params));
}

Status Stage3Strategy::gather_full_parameters(std::span<float> out) {
  if (out.size() != static_cast<size_t>(layout_.numel()))
    return invalid_argument("gather_full_parameters: needs " + std::to_string(layout_.numel()) +
                            " floats, got " + std::to_string(out.size()));
  ZT_RETURN_IF_ERROR(coordinator_.release_all());
  for (const GroupPlan& g : layout_.groups()) {
    BufferPool::Buffer staging;
    comm::WorkPtr work;
    ZT_RETURN_IF_ERROR(issue_gather(g.index, &staging, &work));
    if (work) ZT_RETURN_IF_ERROR(work->wait());
    unpack_gather(g.index, staging.empty() ? nullptr : staging.data(), out.data() + g.offset);
    pool_.release(std::move(staging));
  }
  return Status();
}

Status Stage3Strategy::publish_parameters() {
  ZT_RETURN_IF_ERROR(coordinator_.release_all());
  if (params_ != master_) params_->write(0, master_->f32());
  return refresh_persistent();
}

// Each group's persistent list: own chunk from the master (rounded to the
// storage dtype), all-gathered, into the whole copies.
Status Stage3Strategy::refresh_persistent() {
  const size_t es = dtype_size(param_dtype_);
  std::span<const float> master = master_->f32();
  for (const GroupPlan& g : layout_.groups()) {
    const CompactList& l = g.persistent;
    if (l.count == 0) continue;
    const auto chunk = static_cast<size_t>(l.chunk);
    ZT_ASSIGN_OR_RETURN(BufferPool::Buffer staging,
                        pool_.acquire(static_cast<size_t>(l.padded()) * es));
    std::byte* mine = staging.data() + static_cast<size_t>(rank()) * chunk * es;
    std::memset(mine, 0, chunk * es);
    for (const Piece& p : l.mine)
      from_fp32(param_dtype_, master.data() + p.owned, static_cast<size_t>(p.count),
                mine + static_cast<size_t>(p.compact) * es);
    if (world() > 1)
      ZT_RETURN_IF_ERROR(options_.comm->allgather(std::span<const std::byte>(mine, chunk * es),
                                                  std::span<std::byte>(staging.data(), staging.size())));
    to_fp32(param_dtype_, staging.data(), static_cast<size_t>(l.count),
            persistent_.data() + g.persistent_offset);
    pool_.release(std::move(staging));
  }
  return Status();
}

ModelStateBytes Stage3Strategy::model_state_bytes() const {
  ModelStateBytes b;
  auto add = [&](const PartitionArray& a, int64_t ModelStateBytes::*field, bool host) {
    if (a.on_host() == host) b.*field += a.size_bytes();
  };
  // fp32: the one parameter/master array counts as the compute copy.
  if (params_ == master_) {
    add(master_store_, &ModelStateBytes::parameters, false);
  } else {
    add(master_store_, &ModelStateBytes::master_weights, false);
    add(param_store_, &ModelStateBytes::parameters, false);
  }
  add(grads_, &ModelStateBytes::gradients, false);
  for (const PartitionArray& st : states_) add(st, &ModelStateBytes::optimizer_states, false);
  add(step_grads_, &ModelStateBytes::buffers, false);
  b.parameters += static_cast<int64_t>(persistent_.size_bytes());
  b.buffers += pool_.bytes();
  return b;
}

ModelStateBytes Stage3Strategy::host_model_state_bytes() const {
  ModelStateBytes b;
  auto add = [&](const PartitionArray& a, int64_t ModelStateBytes::*field) {
    if (a.on_host()) b.*field += a.size_bytes();
  };
  if (params_ == master_) {
    add(master_store_, &ModelStateBytes::parameters);
  } else {
    add(master_store_, &ModelStateBytes::master_weights);
    add(param_store_, &ModelStateBytes::parameters);
  }
  add(grads_, &ModelStateBytes::gradients);
  for (const PartitionArray& st : states_) add(st, &ModelStateBytes::optimizer_states);
  add(step_grads_, &ModelStateBytes::buffers);
  return b;
}

}  // namespace zerotrain::zero

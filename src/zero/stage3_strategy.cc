// ZeRO stage 3: construction, the parameter gathers (the coordinator's
// backend), publishing and memory (see stage3_strategy.h); the gradient
// path is in stage3_reduce.cc.
#include "zero/stage3_strategy.h"

#include <algorithm>
#include <string>

#include "device/ops.h"
#include "zero/memory_ops.h"
#include "zero/pass_trace.h"

namespace zerotrain::zero {
namespace {

using device::MemoryCategory;

Status validate(const model::Module* m, const StrategyOptions& o) {
  if (!o.initial_weights && (m->parameters() == nullptr || m->gradients() == nullptr))
    return invalid_argument(
        "Stage3Strategy: the model needs flat parameter and gradient buffers holding its "
        "initial weights (ModuleOptions own_parameters/own_gradients), or "
        "StrategyOptions.initial_weights");
  for (const auto& [key, v] : {std::pair{"reduce_bucket_size", o.reduce_bucket_size},
                               std::pair{"sub_group_size", o.sub_group_size}})
    if (v < 1)
      return invalid_argument(std::string("zero_optimization.") + key + ": must be >= 1, got " +
                              std::to_string(v));
  for (const auto& [key, v] :
       {std::pair{"stage3_prefetch_bucket_size", o.prefetch_bucket_size},
        std::pair{"stage3_param_persistence_threshold", o.param_persistence_threshold},
        std::pair{"stage3_max_live_parameters", o.max_live_parameters},
        std::pair{"stage3_max_reuse_distance", o.max_reuse_distance}})
    if (v < 0)
      return invalid_argument(std::string("zero_optimization.") + key + ": must be >= 0, got " +
                              std::to_string(v));
  return validate_common(o);
}

}  // namespace

StatusOr<std::unique_ptr<Stage3Strategy>> Stage3Strategy::create(model::Module* model,
                                                                 comm::Communicator* comm,
                                                                 const StrategyOptions& o) {
  if (model == nullptr || comm == nullptr)
    return invalid_argument("Stage3Strategy: model and comm are required");
  ZT_RETURN_IF_ERROR(validate(model, o));
  std::unique_ptr<Stage3Strategy> s(new Stage3Strategy(model, comm, o));
  model::Module& m = *model;
  const int n = comm->world_size();
  // Where each owned piece's initial values come from: the caller's reader
  // (this rank's bytes only), or the model's flat buffer broadcast from
  // rank 0.
  PieceSource source;
  if (o.initial_weights) {
    source = [&o, &m](int64_t flat, int64_t count, Tensor dst) -> Status {
      std::vector<float> host(static_cast<size_t>(count));
      ZT_RETURN_IF_ERROR(o.initial_weights(flat, count, host.data()));
      return device::copy_from_host(host.data(), dst);
    };
  } else {
    const Tensor whole(m.parameters(), DType::kFloat32,
                       static_cast<size_t>(m.layout().total_numel()), &m.device());
    if (n > 1) ZT_RETURN_IF_ERROR(comm->broadcast(whole, 0));
    source = [whole](int64_t flat, int64_t count, Tensor dst) {
      return device::copy(whole.slice(static_cast<size_t>(flat), count), dst);
    };
  }
  s->param_dtype_ = o.dtype;
  s->pool_ = BufferPool(&m.device());
  s->layout_ = Stage3Layout(m.layout(), n, comm->rank(), o.param_persistence_threshold,
                            o.model_persistence_threshold);
  s->buffers_.resize(static_cast<size_t>(m.num_groups()));
  ZT_RETURN_IF_ERROR(s->allocate_frozen());
  std::vector<int64_t> group_numel;
  for (const GroupPlan& g : s->layout_.groups())
    group_numel.push_back(g.numel + s->frozen_chunk_[static_cast<size_t>(g.index)] * n);
  CoordinatorOptions co{.prefetch_bucket_size = o.prefetch_bucket_size,
                        .max_live_parameters = o.max_live_parameters,
                        .max_reuse_distance = o.max_reuse_distance};
  ZT_ASSIGN_OR_RETURN(s->coordinator_,
                      ParamCoordinator::create(pass_trace(m), std::move(group_numel), co, s.get()));
  ZT_RETURN_IF_ERROR(s->allocate(source));
  // From here on the model holds no parameter or gradient of its own.
  m.release_owned_buffers();
  s->install_hooks();
  return s;
}

Stage3Strategy::~Stage3Strategy() {
  // Nothing may still write into buffers about to be freed.
  for (PendingReduce& p : reduces_)
    if (p.work) (void)p.work->wait();
  for (GroupBuffers& b : buffers_) {
    if (b.gather) (void)b.gather->wait();
    if (b.frozen_gather) (void)b.frozen_gather->wait();
  }
  if (hooks_installed_) model_->set_hooks({});
}

Tensor Stage3Strategy::group_tensor(int g, const device::Buffer& b) const {
  return b.tensor(DType::kFloat32, 0, static_cast<size_t>(layout_.group(g).numel));
}

// The owned arrays, filled piece by piece from `source`.
Status Stage3Strategy::allocate(const PieceSource& source) {
  device::Device& d = device();
  const auto own = static_cast<size_t>(layout_.owned_numel());
  const bool opt_host = options_.offload_optimizer;
  const bool separate = param_dtype_ != DType::kFloat32;
  const bool master_host = opt_host || (!separate && options_.offload_param);
  // fp32 offloaded by offload_param alone: that block's pin_memory.
  const bool master_pin = opt_host ? options_.pin_memory : options_.pin_param_memory;
  ZT_ASSIGN_OR_RETURN(
      master_store_,
      PartitionArray::allocate(
          d, DType::kFloat32, own,
          {.host = master_host,
           .pin = master_pin,
           .category = separate ? MemoryCategory::kMasterWeights : MemoryCategory::kParameters},
          separate ? "fp32 master partition" : "parameter partition"));
  const Tensor master = master_store_.tensor();
  for (const GroupPlan& g : layout_.groups())
    for (const CompactList* l : {&g.gathered, &g.persistent})
      for (const Piece& p : l->mine)
        ZT_RETURN_IF_ERROR(
            source(p.flat, p.count, master.slice(static_cast<size_t>(p.owned), p.count)));
  if (separate) {
    ZT_ASSIGN_OR_RETURN(param_store_,
                        PartitionArray::allocate(d, param_dtype_, own,
                                                 {.host = options_.offload_param,
                                                  .pin = options_.pin_param_memory,
                                                  .category = MemoryCategory::kParameters},
                                                 "parameter partition"));
    params_ = &param_store_;
    ZT_RETURN_IF_ERROR(params_->write(0, master));  // rounded to the model dtype
  }
  ZT_ASSIGN_OR_RETURN(grads_, PartitionArray::allocate(d, param_dtype_, own,
                                                       {.host = opt_host,
                                                        .pin = options_.pin_memory,
                                                        .category = MemoryCategory::kGradients},
                                                       "gradient partition"));
  if (param_dtype_ == DType::kFloat32) owned_grads_ = grads_.tensor();
  for (int i = 0; i < options_.state_count; ++i) {
    ZT_ASSIGN_OR_RETURN(PartitionArray st,
                        PartitionArray::allocate(d, DType::kFloat32, own,
                                                 {.host = opt_host,
                                                  .pin = options_.pin_memory,
                                                  .category = MemoryCategory::kOptimizerStates},
                                                 "optimizer states"));
    states_.push_back(std::move(st));
  }
  for (const PartitionArray& st : states_) state_tensors_.push_back(st.tensor());
  // Whole copies of the persistent tensors, rounded as the model sees them.
  ZT_ASSIGN_OR_RETURN(persistent_,
                      d.allocate(static_cast<size_t>(layout_.persistent_numel()) * sizeof(float),
                                 MemoryCategory::kParameters, "persistent parameters"));
  const Tensor persistent = persistent_.tensor(DType::kFloat32);
  for (const GroupPlan& g : layout_.groups()) {
    Status st;
    for_each_extent(g.persistent, [&](int64_t f, int64_t c, int64_t cnt) {
      if (!st.ok()) return;
      const Tensor whole = persistent.slice(static_cast<size_t>(g.persistent_offset + c), cnt);
      st = source(f, cnt, whole);
      if (st.ok()) st = d.ops().round_through(options_.dtype, whole, whole);  // elementwise
    });
    ZT_RETURN_IF_ERROR(st);
  }
  return Status();
}

void Stage3Strategy::install_hooks() {
  model::GroupHooks h;
  h.before_forward = [this](int s) { return coordinator_.before_step(s); };
  h.after_forward = [this](int s) { return coordinator_.after_step(s); };
  h.before_backward = [this](int s) { return on_before_backward(s); };
  h.after_backward = [this](int s) { return on_after_backward(s); };
  model_->set_hooks(std::move(h));
  hooks_installed_ = true;
}

// Own chunk of group g's gathered list (storage dtype) into chunk `rank`
// of a staging buffer of all N chunks, then the all-gather in place.
Status Stage3Strategy::issue_gather(int g, device::Buffer* staging, comm::WorkPtr* work) {
  const CompactList& l = layout_.group(g).gathered;
  // One rank owns it all: unpack_gather reads the partition itself.
  if (l.count == 0 || world() == 1) return Status();
  const size_t es = dtype_size(param_dtype_);
  const auto chunk = static_cast<size_t>(l.chunk);
  ZT_ASSIGN_OR_RETURN(*staging, pool_.acquire(static_cast<size_t>(l.padded()) * es));
  const Tensor all = staging->tensor(param_dtype_);
  const Tensor mine = all.slice(static_cast<size_t>(rank()) * chunk, chunk);
  size_t filled = 0;
  for (const Piece& p : l.mine) {
    ZT_RETURN_IF_ERROR(device::copy(params_->slice(static_cast<size_t>(p.owned), p.count),
                                    mine.slice(static_cast<size_t>(p.compact), p.count)));
    filled = static_cast<size_t>(p.compact + p.count);
  }
  ZT_RETURN_IF_ERROR(fill_zero(mine.slice(filled, chunk - filled)));  // padding
  *work = comm_->allgather_async(mine, all);
  if (options_.overlap_comm) return Status();
  // Inline: complete now, in order.
  Status s = (*work)->wait();
  work->reset();
  return s;
}

Status Stage3Strategy::unpack_gather(int g, const device::Buffer* staging, Tensor dst) {
  const GroupPlan& plan = layout_.group(g);
  const auto at = [&](int64_t flat, int64_t count) {
    return dst.slice(static_cast<size_t>(flat - plan.offset), static_cast<size_t>(count));
  };
  Status st;
  if (staging != nullptr) {
    const Tensor all = staging->tensor(param_dtype_);
    for_each_extent(plan.gathered, [&](int64_t f, int64_t c, int64_t cnt) {
      if (st.ok()) st = convert_to(all.slice(static_cast<size_t>(c), cnt), at(f, cnt));
    });
  } else if (world() == 1) {  // no staging copy: this rank's pieces are the whole list
    for (const Piece& p : plan.gathered.mine)
      if (st.ok())
        st = convert_to(params_->slice(static_cast<size_t>(p.owned), p.count), at(p.flat, p.count));
  }
  ZT_RETURN_IF_ERROR(st);
  return unpack_list(plan.persistent, plan.offset,
                     persistent_.tensor(DType::kFloat32)
                         .slice(static_cast<size_t>(plan.persistent_offset),
                                static_cast<size_t>(plan.persistent.count)),
                     dst);
}

Status Stage3Strategy::start_gather(int g) {
  GroupBuffers& b = buffers_[static_cast<size_t>(g)];
  const auto numel = static_cast<size_t>(layout_.group(g).numel);
  ZT_ASSIGN_OR_RETURN(b.params, pool_.acquire(numel * sizeof(float)));
  ZT_RETURN_IF_ERROR(issue_gather(g, &b.staging, &b.gather));
  return issue_frozen_gather(g, &b.frozen, &b.frozen_gather);
}

Status Stage3Strategy::finish_gather(int g) {
  GroupBuffers& b = buffers_[static_cast<size_t>(g)];
  Status s;
  if (b.gather) {
    s = b.gather->wait();
    b.gather.reset();
  }
  if (s.ok())
    s = unpack_gather(g, b.staging.empty() ? nullptr : &b.staging, group_tensor(g, b.params));
  if (s.ok()) model_->set_group_parameters(g, b.params.as<float>());
  pool_.release(std::move(b.staging));
  const Status frozen = finish_frozen_gather(g);  // waits even after an error
  return s.ok() ? frozen : s;
}

void Stage3Strategy::release(int g) {
  model_->set_group_parameters(g, nullptr);
  pool_.release(std::move(buffers_[static_cast<size_t>(g)].params));
  release_frozen(g);
}

Status Stage3Strategy::gather_full_parameters(std::span<float> out) {
  if (out.size() != static_cast<size_t>(layout_.numel()))
    return invalid_argument("gather_full_parameters: needs " + std::to_string(layout_.numel()) +
                            " floats, got " + std::to_string(out.size()));
  ZT_RETURN_IF_ERROR(coordinator_.release_all());
  for (const GroupPlan& g : layout_.groups()) {
    device::Buffer staging;
    comm::WorkPtr work;
    ZT_RETURN_IF_ERROR(issue_gather(g.index, &staging, &work));
    if (work) ZT_RETURN_IF_ERROR(work->wait());
    ZT_RETURN_IF_ERROR(unpack_gather(
        g.index, staging.empty() ? nullptr : &staging,
        Tensor(out.subspan(static_cast<size_t>(g.offset), static_cast<size_t>(g.numel)))));
    pool_.release(std::move(staging));
  }
  return Status();
}

Status Stage3Strategy::publish_parameters() {
  ZT_RETURN_IF_ERROR(coordinator_.release_all());
  if (params_ != master_) ZT_RETURN_IF_ERROR(params_->write(0, master_->tensor()));
  return refresh_persistent();
}

// Each group's persistent list: own chunk from the master (rounded to the
// storage dtype), all-gathered, into the whole copies.
Status Stage3Strategy::refresh_persistent() {
  const Tensor master = master_->tensor();
  const Tensor persistent = persistent_.tensor(DType::kFloat32);
  for (const GroupPlan& g : layout_.groups()) {
    const CompactList& l = g.persistent;
    if (l.count == 0) continue;
    const auto chunk = static_cast<size_t>(l.chunk);
    ZT_ASSIGN_OR_RETURN(device::Buffer staging,
                        pool_.acquire(static_cast<size_t>(l.padded()) * dtype_size(param_dtype_)));
    const Tensor all = staging.tensor(param_dtype_);
    const Tensor mine = all.slice(static_cast<size_t>(rank()) * chunk, chunk);
    ZT_RETURN_IF_ERROR(fill_zero(mine));
    for (const Piece& p : l.mine)
      ZT_RETURN_IF_ERROR(convert_to(master.slice(static_cast<size_t>(p.owned), p.count),
                                    mine.slice(static_cast<size_t>(p.compact), p.count)));
    if (world() > 1) ZT_RETURN_IF_ERROR(comm_->allgather(mine, all));
    ZT_RETURN_IF_ERROR(
        convert_to(all.slice(0, static_cast<size_t>(l.count)),
                   persistent.slice(static_cast<size_t>(g.persistent_offset), l.count)));
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
  b.parameters += static_cast<int64_t>(persistent_.bytes());
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

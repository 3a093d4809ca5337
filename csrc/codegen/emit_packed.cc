// Loads, stores and cp.async of packed sub-byte tensors (int4b, float6_e3m2 ...; the
// format is in ir/packed.h). Register tiles hold one element per byte, so every move
// goes through whole bytes of memory: a thread's run of `vec` consecutive elements
// covers vec*bits/8 bytes, moved with the ordinary vector accesses into 32-bit words
// and spread with tilus::unpack_bits (gathered with pack_bits for a store). A layout
// that gives one byte's elements to several threads loads element by element (reads
// do not race) and is refused for stores: they would race on the byte. Vectors that run
// past the tensor's last extent, and tiles whose memory is not provably aligned, move
// element by element (packed_get / packed_set_atomic).
#include <numeric>

#include "codegen/emitter.h"
#include "ir/packed.h"

namespace tilus {

using memory_index::global_index;
using memory_index::global_offset;
using memory_index::in_bounds;
using memory_index::loop_part_offset;
using memory_index::thread_part_offset;
using memory_index::pow2_divisor;

namespace {

// The bytes a vector of `vec` elements covers, moved in chunks of the largest power
// of two (at most 16) dividing it: the vector starts at a multiple of its own size.
int64_t chunk_bytes(int64_t bytes) { return pow2_divisor(bytes, 16); }

void refuse_split_bytes(const RegisterLayout& layout, const Tensor& t, int bits, const char* what) {
  const int64_t run = CudaEmitter::innermost_run(layout);
  TILUS_CHECK(run * bits % 8 == 0, "TypeError", what, ": ", t->name, " (", t->dtype.name(),
              ", ", bits, " bits) is laid out as ", layout.str(), ": each thread holds runs of ",
              run, " consecutive elements along the last dimension, ", run * bits,
              " bits, so a byte of packed memory would be split between threads. Use a layout "
              "whose innermost local extent is a multiple of ", 8 / std::gcd(bits, 8), " elements");
}

std::string bit_of(const std::string& offset, int bits) {
  return "(long long)(" + offset + ") * " + std::to_string(bits);
}

}  // namespace

void CudaEmitter::packed_vector_load(const std::string& access, const std::string& regs,
                                     const std::string& mem, int bits, int64_t vec) {
  const int64_t bytes = vec * bits / 8, chunk = chunk_bytes(bytes);
  const std::string w = fresh("tl_w");
  open("");
  line("tilus::uint32_t " + w + "[" + std::to_string((bytes + 3) / 4) + "];");
  for (int64_t c = 0; c < bytes; c += chunk)
    line(access + "<" + std::to_string(chunk) + ">(reinterpret_cast<tilus::uint8_t*>(" + w + ") + " +
         std::to_string(c) + ", " + mem + " + " + std::to_string(c) + ");");
  line("tilus::unpack_bits<" + std::to_string(bits) + ", " + std::to_string(vec) + ">(" + regs + ", " + w + ");");
  close();
}

void CudaEmitter::packed_vector_store(const std::string& access, const std::string& mem,
                                      const std::string& regs, int bits, int64_t vec) {
  const int64_t bytes = vec * bits / 8, chunk = chunk_bytes(bytes);
  const std::string w = fresh("tl_w");
  open("");
  line("tilus::uint32_t " + w + "[" + std::to_string((bytes + 3) / 4) + "];");
  line("tilus::pack_bits<" + std::to_string(bits) + ", " + std::to_string(vec) + ">(" + w + ", " + regs + ");");
  for (int64_t c = 0; c < bytes; c += chunk)
    line(access + "<" + std::to_string(chunk) + ">(" + mem + " + " + std::to_string(c) +
         ", reinterpret_cast<const tilus::uint8_t*>(" + w + ") + " + std::to_string(c) + ");");
  close();
}

void CudaEmitter::emit_load_global_packed(const Instruction& i) {
  const Tensor& t = i.output;
  const RegisterLayout& layout = plan_.layout_of(t);
  const GlobalInfo& g = globals_.at(i.inputs[0]->id);
  const int bits = i.inputs[0]->dtype.bits();
  // runs of less than whole bytes (an mma fragment of 4-bit codes) read element by element
  TILUS_CHECK(t->dtype == i.inputs[0]->dtype, "TypeError", "load_global: a packed ",
              i.inputs[0]->dtype.name(), " tensor loads as ", i.inputs[0]->dtype.name(), ", not ",
              t->dtype.name(), "; cast the loaded tile");
  std::string r = declare_reg(t, layout);
  int64_t vec = global_vector(g, i.args, i.dims, t->shape.back(), bits, false);
  vec = pow2_divisor(innermost_run(layout), vec);
  const bool whole = vec * bits % 8 == 0;  // otherwise the alignment is unknown
  if (!whole) vec = 1;
  const int last = static_cast<int>(g.shape.size()) - 1;
  const bool full_vectors = whole && div_.is_multiple(g.shape[last], vec);
  const bool bypass_l1 = written_globals_.count(i.inputs[0]->id) > 0;
  const std::string access = bypass_l1 ? "tilus::load_global_cg" : "tilus::load_global_vec";
  const std::string base = "reinterpret_cast<const tilus::uint8_t*>(" + g.ptr + ")";
  line("// load_global of packed " + i.inputs[0]->dtype.name() + ": " +
       (whole ? std::to_string(vec * bits / 8) + "-byte vectors" : std::string("element by element")));
  for_each_local(layout, vec, [&](const Element& el) {
    auto gi = global_index(i.args, i.dims, el.coords);
    std::string cond = in_bounds(*this, gi, g);
    const std::string mask = tile_mask(layout, t->shape, el);
    if (!mask.empty()) cond = mask + " && " + cond;
    const std::string off = expr(global_offset(gi, g));
    const std::string regs = "(" + r + " + " + expr(el.local) + ")";
    if (!whole) {
      line(regs + "->bits = (" + cond + ") ? tilus::packed_get(" + base + ", " + bit_of(off, bits) + ", " +
           std::to_string(bits) + ") : 0;");
      return;
    }
    std::string full = cond;
    if (!full_vectors) full += " && (" + expr(gi[last]) + ") + " + std::to_string(vec) + " <= " + g.shape_c[last];
    open("if (" + full + ")");
    packed_vector_load(access, regs, base + " + (" + bit_of(off, bits) + " >> 3)", bits, vec);
    close("} else {");
    ++indent_;
    // The ragged end of a row: each element on its own, those past the end read 0.
    std::string cz = in_bounds(*this, gi, g, last);
    if (!mask.empty()) cz = mask + " && " + cz;
    line("#pragma unroll");
    line("for (int z = 0; z < " + std::to_string(vec) + "; ++z) " + regs + "[z].bits = (" + cz + " && (" +
         expr(gi[last]) + ") + z < " + g.shape_c[last] + ") ? tilus::packed_get(" + base + ", " +
         bit_of(off, bits) + " + z * " + std::to_string(bits) + ", " + std::to_string(bits) + ") : 0;");
    close();
  });
}

void CudaEmitter::emit_store_global_packed(const Instruction& i) {
  const Tensor& x = i.inputs[1];
  const RegisterLayout& layout = plan_.layout_of(x);
  const GlobalInfo& g = globals_.at(i.inputs[0]->id);
  const int bits = i.inputs[0]->dtype.bits();
  refuse_split_bytes(layout, x, bits, "store_global");
  TILUS_CHECK(x->dtype == i.inputs[0]->dtype, "TypeError", "store_global: a packed ",
              i.inputs[0]->dtype.name(), " tensor stores ", i.inputs[0]->dtype.name(), " tiles, not ",
              x->dtype.name(), "; cast the tile first");
  std::string r = reg_name(x);
  int64_t vec = global_vector(g, i.args, i.dims, x->shape.back(), bits, false);
  vec = pow2_divisor(innermost_run(layout), vec);
  const bool whole = vec * bits % 8 == 0;
  if (!whole) vec = 1;
  const int last = static_cast<int>(g.shape.size()) - 1;
  const bool full_vectors = whole && div_.is_multiple(g.shape[last], vec);
  const std::string base = "reinterpret_cast<tilus::uint8_t*>(" + g.ptr + ")";
  std::string leader = replica_leader(layout);
  line("// store_global of packed " + i.inputs[0]->dtype.name() + ": " +
       (whole ? std::to_string(vec * bits / 8) + "-byte vectors" : std::string("element by element")));
  if (!leader.empty()) open("if (" + leader + ")");
  for_each_local(layout, vec, [&](const Element& el) {
    auto gi = global_index(i.args, i.dims, el.coords);
    std::string cond = in_bounds(*this, gi, g);
    const std::string mask = tile_mask(layout, x->shape, el);
    if (!mask.empty()) cond = mask + " && " + cond;
    const std::string off = expr(global_offset(gi, g));
    const std::string regs = "(" + r + " + " + expr(el.local) + ")";
    if (!whole) {
      line("if (" + cond + ") tilus::packed_set_atomic(" + base + ", " + bit_of(off, bits) + ", " +
           std::to_string(bits) + ", " + regs + "->bits);");
      return;
    }
    std::string full = cond;
    if (!full_vectors) full += " && (" + expr(gi[last]) + ") + " + std::to_string(vec) + " <= " + g.shape_c[last];
    open("if (" + full + ")");
    packed_vector_store("tilus::store_global_vec", base + " + (" + bit_of(off, bits) + " >> 3)", regs, bits, vec);
    close("} else {");
    ++indent_;
    // The ragged end of a row shares its last byte with whatever follows the row.
    std::string cz = in_bounds(*this, gi, g, last);
    if (!mask.empty()) cz = mask + " && " + cz;
    line("#pragma unroll");
    line("for (int z = 0; z < " + std::to_string(vec) + "; ++z) if (" + cz + " && (" + expr(gi[last]) +
         ") + z < " + g.shape_c[last] + ") tilus::packed_set_atomic(" + base + ", " + bit_of(off, bits) +
         " + z * " + std::to_string(bits) + ", " + std::to_string(bits) + ", " + regs + "[z].bits);");
    close();
  });
  if (!leader.empty()) close();
}

void CudaEmitter::emit_load_shared_packed(const Instruction& i) {
  const Tensor& t = i.output;
  const RegisterLayout& layout = plan_.layout_of(t);
  const SharedInfo& s = shared_.at(i.inputs[0]->id);
  const int bits = t->dtype.bits();
  // runs of less than whole bytes read element by element (vec = 1 below)
  std::string r = declare_reg(t, layout);
  int64_t vec = pow2_divisor(innermost_run(layout), std::max<int64_t>(1, 128 / bits));
  vec = pow2_divisor(t->shape.back(), vec);
  while (vec > 1 && !shared_contiguous(s, vec)) vec /= 2;
  const bool whole = vec * bits % 8 == 0;
  if (!whole) vec = 1;
  const std::string base = "reinterpret_cast<const tilus::uint8_t*>(" + s.ptr + ")";
  for_each_local(layout, vec, [&](const Element& el) {
    const std::string mask = tile_mask(layout, t->shape, el);
    if (!mask.empty()) open("if (" + mask + ")");
    const std::string off = expr(element_offset(s, layout, vec, el));
    const std::string regs = "(" + r + " + " + expr(el.local) + ")";
    if (whole)
      packed_vector_load("tilus::load_shared_vec", regs, base + " + (" + bit_of(off, bits) + " >> 3)", bits, vec);
    else
      line(regs + "->bits = tilus::packed_get(" + base + ", " + bit_of(off, bits) + ", " + std::to_string(bits) + ");");
    if (!mask.empty()) close();
  });
}

void CudaEmitter::emit_store_shared_packed(const Instruction& i) {
  const Tensor& x = i.inputs[1];
  const RegisterLayout& layout = plan_.layout_of(x);
  const SharedInfo& s = shared_.at(i.inputs[0]->id);
  const int bits = x->dtype.bits();
  refuse_split_bytes(layout, x, bits, "store_shared");
  std::string r = reg_name(x);
  int64_t vec = pow2_divisor(innermost_run(layout), std::max<int64_t>(1, 128 / bits));
  vec = pow2_divisor(x->shape.back(), vec);
  while (vec > 1 && !shared_contiguous(s, vec)) vec /= 2;
  const bool whole = vec * bits % 8 == 0;
  if (!whole) vec = 1;
  const std::string base = "reinterpret_cast<tilus::uint8_t*>(" + s.ptr + ")";
  std::string leader = replica_leader(layout);
  if (!leader.empty()) open("if (" + leader + ")");
  for_each_local(layout, vec, [&](const Element& el) {
    const std::string mask = tile_mask(layout, x->shape, el);
    if (!mask.empty()) open("if (" + mask + ")");
    const std::string off = expr(element_offset(s, layout, vec, el));
    const std::string regs = "(" + r + " + " + expr(el.local) + ")";
    if (whole)
      packed_vector_store("tilus::store_shared_vec", base + " + (" + bit_of(off, bits) + " >> 3)", regs, bits, vec);
    else
      line("tilus::packed_set_atomic(" + base + ", " + bit_of(off, bits) + ", " + std::to_string(bits) + ", " +
           regs + "->bits);");
    if (!mask.empty()) close();
  });
  if (!leader.empty()) close();
  if (plan_.wgmma_roots.count(s.root) && !copy_tma_) fence_for_wgmma();  // else inst() fences
}

void CudaEmitter::emit_copy_async_packed(const Instruction& i) {
  const Tensor& src = i.inputs[0];
  const Tensor& dst = i.inputs[1];
  const GlobalInfo& g = globals_.at(src->id);
  const SharedInfo& s = shared_.at(dst->id);
  const int bits = dst->dtype.bits();
  TILUS_CHECK(src->dtype == dst->dtype, "TypeError", "copy_async: packed ", src->dtype.name(),
              " memory copies into a ", src->dtype.name(), " shared tensor, not ", dst->dtype.name());
  // 16-byte chunks: 32 uint4b elements, 128/bits in general.
  RegisterLayout layout = auto_global_layout(dst->shape, threads_, std::max<int64_t>(1, 128 / bits));
  int64_t vec = global_vector(g, i.args, i.dims, dst->shape.back(), bits, false);
  vec = pow2_divisor(innermost_run(layout), vec);
  while (vec > 1 && !shared_contiguous(s, vec)) vec /= 2;
  const int64_t bytes = vec * bits % 8 == 0 ? vec * bits / 8 : 0;
  // A 3-bit run of 32 elements is 12 bytes: three cp.async of 4.
  const int64_t chunk = bytes ? chunk_bytes(bytes) : 0;
  const bool async = chunk >= 4;
  if (!async) vec = 1;
  const std::string gbase = "reinterpret_cast<const tilus::uint8_t*>(" + g.ptr + ")";
  const std::string sbase = "reinterpret_cast<tilus::uint8_t*>(" + s.ptr + ")";
  std::string leader = replica_leader(layout);
  line(std::string("// copy_async of packed ") + src->dtype.name() +
       (async ? " with cp.async of " + std::to_string(chunk) + " bytes" +
                    (chunk < bytes ? " (" + std::to_string(bytes / chunk) + " per vector)" : std::string())
              : " element by element (alignment unknown)"));
  if (!leader.empty()) open("if (" + leader + ")");
  const int last = static_cast<int>(g.shape.size()) - 1;
  const bool full_chunks = div_.is_multiple(g.shape[last], vec);
  // The source addresses as emit_copy_async's: a thread's first chunk once, then constant
  // distances. Every chunk starts on a byte (vec * bits is whole bytes, and the thread's
  // first chunk is one of them), so both parts are whole bytes.
  std::string src_base;
  if (async) {
    src_base = fresh("tl_src");
    line("const auto " + src_base + " = " + gbase + " + (" +
         bit_of(expr(thread_part_offset(i.args, i.dims, layout, tid_, g)), bits) + " >> 3);");
  }
  auto copy_each = [&](bool tested) {
    for_each_local(layout, vec, [&](const Element& el) {
      auto gi = global_index(i.args, i.dims, el.coords);
      const std::string soff = expr(element_offset(s, layout, vec, el));
      const std::string goff = expr(global_offset(gi, g));
      if (!async) {
        line("tilus::packed_set_atomic(" + sbase + ", " + bit_of(soff, bits) + ", " + std::to_string(bits) + ", (" +
             in_bounds(*this, gi, g) + ") ? tilus::packed_get(" + gbase + ", " + bit_of(goff, bits) + ", " +
             std::to_string(bits) + ") : 0);");
        return;
      }
      const std::string src_at =
          src_base + " + (" + bit_of(expr(loop_part_offset(el, i.dims, i.args.size(), g)), bits) + " >> 3)";
      // A chunk past the row's end copies the bytes holding its in-range elements (src-size
      // zero-fills the rest); the elements past the end that share the last byte come along.
      std::string n;
      if (tested) {
        n = fresh("tl_bytes");
        if (full_chunks) {
          line("const int " + n + " = (" + in_bounds(*this, gi, g) + ") ? " + std::to_string(bytes) + " : 0;");
        } else {
          line("const int " + n + " = (" + in_bounds(*this, gi, g, last) + ") ? tilus::max_(0, tilus::min_(" +
               std::to_string(bytes) + ", (int)(((" + g.shape_c[last] + " - (" + expr(gi[last]) + ")) * " +
               std::to_string(bits) + " + 7) / 8))) : 0;");
        }
      }
      for (int64_t c = 0; c < bytes; c += chunk) {
        // the bytes of this chunk to read: all of a whole tile's; of the tested size, its share
        std::string nc = std::to_string(chunk);
        if (tested) nc = chunk == bytes ? n : "tilus::max_(0, tilus::min_(" + nc + ", " + n + " - " +
                                                  std::to_string(c) + "))";
        line("tilus::cp_async_" + std::to_string(chunk) + "(tilus::smem_u32(" + sbase + " + (" + bit_of(soff, bits) +
             " >> 3) + " + std::to_string(c) + "), " + src_at + " + " + std::to_string(c) + ", " + nc + ");");
      }
    }, /*outer_unroll=*/async ? 0 : 1);
  };
  // a tile wholly inside the tensor: whole chunks, untested (as emit_copy_async)
  split_on_whole_tile(async ? whole_tile_in_bounds(i, layout, dst->shape, g) : std::string(),
                      "whole chunks, no per-chunk test", copy_each);
  if (!leader.empty()) close();
}

}  // namespace tilus

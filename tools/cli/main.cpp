// Entry point of the `cagra` command-line tool: picks the subcommand, and turns every failure into
// exactly one "error: ..." line on stderr with a meaningful exit status (2 = usage mistake,
// 1 = anything else). The tool never lets an exception escape, because scripts (demo, bench
// sweeps, CI) rely on a clean one-line message and a non-zero status rather than a core dump.
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "cli.hpp"

namespace {

using cagra::cli::command_spec;

const command_spec* const* commands() {
  static const command_spec* const table[] = {
      &cagra::cli::build_command(),       &cagra::cli::extend_command(),
      &cagra::cli::remove_command(),      &cagra::cli::compact_command(),
      &cagra::cli::search_command(),      &cagra::cli::eval_command(),
      &cagra::cli::bench_command(),       &cagra::cli::info_command(),
      &cagra::cli::gt_command(),          &cagra::cli::export_hnsw_command(),
      &cagra::cli::import_hnsw_command(), nullptr};
  return table;
}

const command_spec* find_command(const std::string& name) {
  for (const command_spec* const* c = commands(); *c != nullptr; ++c)
    if (name == (*c)->name) return *c;
  return nullptr;
}

void print_version() {
  std::printf("cagra %s (library %s; CUDA backend %s)\n", CAGRA_VERSION, cagra::version(),
              cagra::cuda_available() ? "available" : "not available");
}

void print_main_help(FILE* out) {
  std::fprintf(out,
               "cagra %s: CAGRA graph-based approximate nearest-neighbor search on GPU and CPU\n\n"
               "usage: cagra COMMAND ARGUMENTS [OPTIONS]\n\ncommands:\n",
               CAGRA_VERSION);
  for (const command_spec* const* c = commands(); *c != nullptr; ++c)
    std::fprintf(out, "  %-11s %s\n", (*c)->name, (*c)->summary);
  std::fprintf(out,
               "\nRun 'cagra COMMAND --help' for the arguments and options of a command.\n"
               "Other options: --help, --version. Documentation: docs/cli.md.\n");
}

int dispatch(int argc, char** argv) {
  if (argc < 2) throw cagra::cli::usage_error("no command given (try 'cagra --help')");
  const std::string first = argv[1];
  if (first == "--help" || first == "-h") {
    print_main_help(stdout);
    return 0;
  }
  if (first == "--version" || first == "-V") {
    print_version();
    return 0;
  }
  if (first == "help") {
    if (argc == 2) {
      print_main_help(stdout);
      return 0;
    }
    const command_spec* c = find_command(argv[2]);
    if (c == nullptr) {
      throw cagra::cli::usage_error(std::string("unknown command '") + argv[2] + "'");
    }
    cagra::cli::print_command_help(*c, stdout);
    return 0;
  }
  const command_spec* c = find_command(first);
  if (c == nullptr) {
    throw cagra::cli::usage_error(
        "unknown command '" + first +
        "' (commands: build, extend, remove, compact, search, eval, bench, info, gt, "
        "export-hnsw, import-hnsw)");
  }
  cagra::cli::args a(*c, argc, argv, 2);
  if (a.help()) {
    cagra::cli::print_command_help(*c, stdout);
    return 0;
  }
  return c->run(a);
}

// Library messages may list several violations on separate lines; the contract is one line.
void report(const char* what) {
  std::string msg = what != nullptr && *what != '\0' ? what : "unknown failure";
  std::string out;
  bool pending_sep = false;
  for (char c : msg) {
    if (c == '\n' || c == '\r') {
      pending_sep = !out.empty();
      continue;
    }
    if (pending_sep) {
      out += "; ";
      pending_sep = false;
    }
    out += c;
  }
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s\n", out.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const cagra::cli::usage_error& e) {
    report(e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    report("out of memory");
  } catch (const std::exception& e) {
    report(e.what());
  } catch (...) {
    report("unknown failure");
  }
  return 1;
}

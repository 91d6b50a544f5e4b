// Must not compile: a handler with an `auto` parameter (a generic lambda) has no signature to
// fill parameters from. tests/CMakeLists.txt checks that the compiler says what to write instead
// (make_handler's static_assert), not an error deep inside handler_traits.hpp.
#include "vela/web/app.hpp"

struct Note {
    int id = 0;
};
VELA_REFLECT(Note, id)

int main() {
    vela::App app;
    app.post("/notes", [](auto body) { return body.value; });
}

# The Debian package: `cmake --build build --target package` writes build/package/llmrepro_<version>_<arch>.deb
# holding what `cmake --install` installs, under /usr. Its Depends are computed by
# dpkg-shlibdeps (Debian's dpkg-dev) from the libraries the installed executables link, so they
# name runtime libraries (libcurl4, libsqlite3-0, libfmt9, libstdc++6, ...) and never a -dev
# package. Files are stripped: the package carries no debug information.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME llmrepro)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "llmrepro project")
set(CPACK_PACKAGE_CONTACT "llmrepro project")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "llmrepro project")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "audit how reproducible an LLM inference endpoint is at temperature 0")
set(CPACK_PACKAGE_DESCRIPTION
    "llmrepro sends each prompt of a suite several times at several concurrency levels, records \
every token with its top logprobs, finds where completions diverge, flags prompts whose top two \
tokens are nearly tied, and gates CI on the result. It includes a small reference engine \
(llmrepro serve) and a reduction-order micro-probe (llmrepro gpu-probe).")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/package)
include(CPack)

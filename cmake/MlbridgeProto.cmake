# mlbridge_generate_grpc(<out-var> PROTO_ROOT <dir> PROTOS <file>... OUT_DIR <dir>)
#
# Generates C++ protobuf and gRPC code for PROTOS (paths relative to
# PROTO_ROOT, which is also the import root) into OUT_DIR at build time, and
# sets <out-var> to the generated .cc files. Needs find_package(Protobuf) and
# find_package(gRPC CONFIG) first. Used for mlbridge's own protos; users call
# it for theirs in their own build (the library is never rebuilt per proto).
function(mlbridge_generate_grpc OUT_VAR)
  cmake_parse_arguments(ARG "" "PROTO_ROOT;OUT_DIR" "PROTOS" ${ARGN})
  set(generated)
  foreach(proto ${ARG_PROTOS})
    get_filename_component(dir ${proto} DIRECTORY)
    get_filename_component(stem ${proto} NAME_WE)
    set(base ${ARG_OUT_DIR}/${dir}/${stem})
    set(outputs ${base}.pb.cc ${base}.pb.h ${base}.grpc.pb.cc ${base}.grpc.pb.h)
    add_custom_command(
      OUTPUT ${outputs}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${ARG_OUT_DIR}
      COMMAND protobuf::protoc
        -I ${ARG_PROTO_ROOT}
        --cpp_out=${ARG_OUT_DIR}
        --grpc_out=${ARG_OUT_DIR}
        --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>
        ${ARG_PROTO_ROOT}/${proto}
      DEPENDS ${ARG_PROTO_ROOT}/${proto} protobuf::protoc gRPC::grpc_cpp_plugin
      COMMENT "Generating C++ code for ${proto}"
      VERBATIM)
    list(APPEND generated ${base}.pb.cc ${base}.grpc.pb.cc)
  endforeach()
  set(${OUT_VAR} ${generated} PARENT_SCOPE)
endfunction()

# Writes the bash completion of ccsynth from the executable's own --help, so it lists exactly the
# verbs (and sub-verbs, e.g. `topo show`) and flags the built `ccsynth` has.
#   cmake -DCCSYNTH=<ccsynth executable> -DOUTPUT=<file> -P ccsynth_completion.cmake
# Flags that take a value get file names when their name says file/output/sketch/dir/topology,
# CLI11's `{a,b,c}` choices when the help shows them, and nothing otherwise.
cmake_minimum_required(VERSION 3.25)
if(NOT CCSYNTH OR NOT OUTPUT)
  message(FATAL_ERROR "usage: cmake -DCCSYNTH=<exe> -DOUTPUT=<file> -P ccsynth_completion.cmake")
endif()

# The --help text of `ccsynth <path>` as a list of lines (brackets and semicolons masked, since
# they would confuse CMake lists; nothing parsed below needs them).
function(help_lines path out)
  separate_arguments(args UNIX_COMMAND "${path}")
  execute_process(COMMAND ${CCSYNTH} ${args} --help OUTPUT_VARIABLE text RESULT_VARIABLE rc
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "`ccsynth ${path} --help` failed (${rc}): ${err}")
  endif()
  string(REPLACE ";" "," text "${text}")
  string(REPLACE "[" "(" text "${text}")
  string(REPLACE "]" ")" text "${text}")
  string(REPLACE "\\" "/" text "${text}")
  string(REPLACE "\n" ";" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

set(cases "")        # case arms: path) opts=...; subs=... ;;
set(value_cases "")  # case arms: "path|flag") completion of the flag's value ;;
set(pending "")      # command paths still to read ("" is the top level)
set(first TRUE)
while(first OR pending)
  if(first)
    set(path "")
    set(first FALSE)
  else()
    list(POP_FRONT pending path)
  endif()
  help_lines("${path}" lines)
  set(section "")
  set(opts "")
  set(subs "")
  set(positional FALSE)
  foreach(line IN LISTS lines)
    if(line MATCHES "^([A-Za-z]+):[ ]*$")
      set(section "${CMAKE_MATCH_1}")
    elseif(section STREQUAL "Options" AND line MATCHES "^  (-[^ ]+)(.*)$")
      set(names "${CMAKE_MATCH_1}")
      set(rest "${CMAKE_MATCH_2}")
      string(REPLACE "," ";" names "${names}")
      list(APPEND opts ${names})
      # A value-taking option shows its type (TEXT, INT=0, FLOAT:> 0, :{a,b}, ...) right after
      # its names, a flag only spaces and its description.
      if(rest MATCHES "^ ([A-Z][A-Z0-9_]*|:)")
        set(choices "")
        if(rest MATCHES "^ [A-Z0-9_]*:{([^}]*)}")
          string(REPLACE "," " " choices "${CMAKE_MATCH_1}")
        endif()
        set(arm "")
        foreach(n IN LISTS names)
          list(APPEND arm "\"${path}|${n}\"")
        endforeach()
        list(JOIN arm "|" arm)
        if(choices)
          string(APPEND value_cases
                 "    ${arm}) COMPREPLY=($(compgen -W \"${choices}\" -- \"$cur\")) ;;\n")
        elseif(names MATCHES "topology")
          string(APPEND value_cases
                 "    ${arm}) COMPREPLY=($(compgen -W \"$(_ccsynth_topologies)\" -- \"$cur\") $(compgen -f -- \"$cur\")) ;;\n")
        elseif(names MATCHES "dir")
          string(APPEND value_cases "    ${arm}) COMPREPLY=($(compgen -d -- \"$cur\")) ;;\n")
        elseif(names MATCHES "file|output|sketch|save")
          string(APPEND value_cases "    ${arm}) COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n")
        else()
          string(APPEND value_cases "    ${arm}) COMPREPLY=() ;;\n")
        endif()
      endif()
    elseif(section STREQUAL "Subcommands" AND line MATCHES "^  ([a-z][a-z0-9_-]*)( |$)")
      list(APPEND subs "${CMAKE_MATCH_1}")
    elseif(section STREQUAL "Positionals" AND line MATCHES "^  [a-z]")
      set(positional TRUE)
    endif()
  endforeach()
  foreach(sub IN LISTS subs)
    if(path STREQUAL "")
      list(APPEND pending "${sub}")
    else()
      list(APPEND pending "${path} ${sub}")
    endif()
  endforeach()
  list(JOIN opts " " opts)
  list(JOIN subs " " subs)
  string(APPEND cases
         "    \"${path}\") opts=\"${opts}\"; subs=\"${subs}\"; files=${positional} ;;\n")
endwhile()

file(WRITE "${OUTPUT}" "# bash completion for ccsynth                                  -*- shell-script -*-
# Generated from `ccsynth --help` by cmake/ccsynth_completion.cmake; do not edit.

# Built-in topology names, for --topology.
_ccsynth_topologies() {
  ccsynth topo list 2>/dev/null | awk '$1 ~ /^[a-z][a-z0-9]*$/ { print $1 }'
}

_ccsynth() {
  local cur prev
  COMPREPLY=()
  cur=\"\${COMP_WORDS[COMP_CWORD]}\"
  prev=\"\${COMP_WORDS[COMP_CWORD-1]}\"

  # The verb path so far (e.g. `topo show`): the words naming sub-commands before the cursor.
  local path=\"\" opts subs files i word
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=\"\${COMP_WORDS[i]}\"
    [[ $word == -* ]] && continue
    _ccsynth_level \"$path\"
    if [[ \" $subs \" == *\" $word \"* ]]; then
      path=\"\${path:+$path }$word\"
    fi
  done
  _ccsynth_level \"$path\"

  case \"$path|$prev\" in
${value_cases}    *)
      if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))
      else
        COMPREPLY=($(compgen -W \"$subs\" -- \"$cur\"))
        if [[ $files == TRUE ]]; then COMPREPLY+=($(compgen -f -- \"$cur\")); fi
      fi
      ;;
  esac
}

# Sets opts, subs and files (does the level take file arguments) for a verb path.
_ccsynth_level() {
  case \"$1\" in
${cases}    *) opts=\"\"; subs=\"\"; files=TRUE ;;
  esac
}

complete -F _ccsynth ccsynth
")
